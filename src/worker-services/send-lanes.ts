/**
 * The worker's lanes for batches' first attempts: at most `perKey` sends in flight to one endpoint and
 * `total` in all, across every batch the worker runs at once. Without them each batch had lanes of its own,
 * so a worker running 200 batches sent 200 × 32 requests at once to one endpoint, and held them all in
 * memory. A send waiting for a lane waits in arrival order, behind those of its endpoint.
 *
 * Each endpoint's waiters are a queue of their own: at volume thousands of sends wait (a worker's batches start
 * together), and a freed lane finds its next send without scanning or shifting them all.
 */
export class SendLanes {
  private readonly busy = new Map<string, number>();
  private inFlight = 0;
  private readonly waiting = new Map<string, Waiters>();
  private arrivals = 0;

  constructor(
    readonly perKey: number,
    readonly total: number,
  ) {}

  /** Runs `work` once a lane to `key` is free, and frees it when the work ends. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    // a waiter's lane is taken for it when it is woken, so that nothing arriving meanwhile takes it first
    if (this.free(key) && !this.waiting.has(key)) this.take(key);
    else await new Promise<void>((go) => this.queueOf(key).push({ arrival: this.arrivals++, go }));
    try {
      return await work();
    } finally {
      this.release(key);
    }
  }

  /** Sends in flight now, to one endpoint or in all, and those waiting for a lane. */
  stats(key?: string): { inFlight: number; waiting: number } {
    if (key !== undefined) return { inFlight: this.busy.get(key) ?? 0, waiting: this.waiting.get(key)?.size ?? 0 };
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.size;
    return { inFlight: this.inFlight, waiting };
  }

  private free(key: string): boolean {
    return this.inFlight < this.total && (this.busy.get(key) ?? 0) < this.perKey;
  }

  private take(key: string): void {
    this.inFlight++;
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
  }

  private queueOf(key: string): Waiters {
    let queue = this.waiting.get(key);
    if (!queue) this.waiting.set(key, (queue = new Waiters()));
    return queue;
  }

  private release(key: string): void {
    const totalWasFull = this.inFlight === this.total;
    this.inFlight--;
    const left = this.busy.get(key)! - 1;
    if (left === 0) this.busy.delete(key);
    else this.busy.set(key, left);
    // the first waiter that can go now: of the endpoint just freed, or, when the total was the bound, the
    // earliest of any endpoint with room (below the total, only this endpoint's waiters waited for this lane)
    const next = totalWasFull ? this.earliestFree() : this.waiting.has(key) ? key : undefined;
    if (next === undefined) return;
    const queue = this.waiting.get(next)!;
    const waiter = queue.shift();
    if (queue.size === 0) this.waiting.delete(next);
    this.take(next);
    waiter.go();
  }

  /** The endpoint whose first waiter came earliest among those with a lane free to them. */
  private earliestFree(): string | undefined {
    let best: string | undefined;
    let arrival = Infinity;
    for (const [key, queue] of this.waiting) {
      if (queue.first().arrival < arrival && this.free(key)) {
        best = key;
        arrival = queue.first().arrival;
      }
    }
    return best;
  }
}

interface Waiter {
  arrival: number;
  go: () => void;
}

/** A first-in, first-out queue: taking from the front costs the same however many wait. */
class Waiters {
  private items: Waiter[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(waiter: Waiter): void {
    this.items.push(waiter);
  }

  first(): Waiter {
    return this.items[this.head]!;
  }

  shift(): Waiter {
    const waiter = this.items[this.head]!;
    this.items[this.head++] = undefined as unknown as Waiter;
    // the taken front is let go of now and then, not on every take
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return waiter;
  }
}
