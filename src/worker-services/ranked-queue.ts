/**
 * Attempts waiting in a worker for a place at an endpoint (a cell of its rate, or one of its attempts in
 * flight), served by rank (0 first: rankOf), and in arrival order within a rank.
 */
export class RankedQueue {
  private readonly items: { rank: number; wake: () => void }[] = [];

  get length(): number {
    return this.items.length;
  }

  /** How many are served before one of `rank` that joins now. */
  ahead(rank: number): number {
    const after = this.items.findIndex((item) => item.rank > rank);
    return after === -1 ? this.items.length : after;
  }

  push(rank: number, wake: () => void): void {
    this.items.splice(this.ahead(rank), 0, { rank, wake });
  }

  /** One that gave up waiting leaves: false when it was served already. */
  remove(wake: () => void): boolean {
    const i = this.items.findIndex((item) => item.wake === wake);
    if (i >= 0) this.items.splice(i, 1);
    return i >= 0;
  }

  /** The next to serve, taken out of the queue. */
  shift(): (() => void) | undefined {
    return this.items.shift()?.wake;
  }
}
