/**
 * The worker's lanes for batches' first attempts: at most `perKey` sends in flight to one endpoint and
 * `total` in all, across every batch the worker runs at once. Without them each batch had lanes of its own,
 * so a worker running 200 batches sent 200 × 32 requests at once to one endpoint, and held them all in
 * memory. A send waiting for a lane waits in arrival order, behind those of its endpoint.
 */
export class SendLanes {
  private readonly busy = new Map<string, number>();
  private inFlight = 0;
  private readonly waiting: { key: string; go: () => void }[] = [];

  constructor(
    readonly perKey: number,
    readonly total: number,
  ) {}

  /** Runs `work` once a lane to `key` is free, and frees it when the work ends. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    // a waiter's lane is taken for it when it is woken, so that nothing arriving meanwhile takes it first
    if (this.free(key)) this.take(key);
    else await new Promise<void>((go) => this.waiting.push({ key, go }));
    try {
      return await work();
    } finally {
      this.release(key);
    }
  }

  /** Sends in flight now, to one endpoint or in all. */
  stats(key?: string): { inFlight: number; waiting: number } {
    if (key === undefined) return { inFlight: this.inFlight, waiting: this.waiting.length };
    return { inFlight: this.busy.get(key) ?? 0, waiting: this.waiting.filter((w) => w.key === key).length };
  }

  private free(key: string): boolean {
    return this.inFlight < this.total && (this.busy.get(key) ?? 0) < this.perKey;
  }

  private take(key: string): void {
    this.inFlight++;
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
  }

  private release(key: string): void {
    this.inFlight--;
    const left = this.busy.get(key)! - 1;
    if (left === 0) this.busy.delete(key);
    else this.busy.set(key, left);
    // the first waiter that can go now: of the endpoint just freed, or of another when the total was the bound
    const i = this.waiting.findIndex((w) => this.free(w.key));
    if (i < 0) return;
    const next = this.waiting.splice(i, 1)[0]!;
    this.take(next.key);
    next.go();
  }
}
