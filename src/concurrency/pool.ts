/*
 * Bounded concurrency, written once. The model is cockatiel's bulkhead: a limit on the executions in flight, the
 * others waiting their turn in the order they came. Two shapes of it: `Bulkhead`, for work that arrives over
 * time (a batcher's batches), and the pools below, for a list known up front (a set of submits, of redrives, of
 * a batch's messages), which start the items in the order given and never hold more than the list in memory.
 *
 * A failure in a pool: the first one rejects the pool with its error, and no further item starts (those in
 * flight run to their end, unawaited). A caller that wants every item tried catches in its task and collects.
 */

export interface PoolOptions {
  /** Once aborted, no further item starts; those in flight finish, and the pool resolves. */
  signal?: AbortSignal;
}

/** Runs `task` on every item, at most `limit` at once, started in the order given. */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
  options: PoolOptions = {},
): Promise<void> {
  const stop: Stop = { failed: false, ...(options.signal && { signal: options.signal }) };
  await runWorkers(workersFor(limit, items.length), new Cursor(items.length), (i) => task(items[i]!, i), stop);
}

/** `task`'s results for every item, in the order given; at most `limit` run at once. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  await forEachBounded(items, limit, async (item, i) => {
    results[i] = await task(item, i);
  });
  return results;
}

/**
 * Runs `task` on every item, at most `limit` at once and `perKey` at once for one key: each key's items start in
 * the order given, keys side by side. A key's lanes hold their place in the pool until the key has no item left,
 * so keys beyond the limit start as others finish, in the order they first came.
 */
export async function forEachBoundedByKey<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  limits: { limit: number; perKey: number },
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  const stop: Stop = { failed: false };
  const lanes: (() => Promise<void>)[] = [];
  for (const queue of indexesByKey(items, keyOf)) {
    // the key's lanes take its items in turn
    const cursor = new Cursor(queue.length);
    const lane = () => work(cursor, (n) => task(items[queue[n]!]!, queue[n]!), stop);
    for (let n = 0; n < workersFor(limits.perKey, queue.length); n++) lanes.push(lane);
  }
  await runWorkers(workersFor(limits.limit, lanes.length), new Cursor(lanes.length), (l) => lanes[l]!(), stop);
}

/**
 * At most `limit` executions at once; the others wait, first come first served (a finished one's slot passes to
 * the first waiting). The queue is not bounded: unlike cockatiel's, a full bulkhead makes callers wait, never refuses.
 */
export class Bulkhead {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}

/** Why workers stop taking items: one failed, or the caller's signal aborted. */
interface Stop {
  failed: boolean;
  signal?: AbortSignal;
}

/** The next index to take, shared by the workers of one list. */
class Cursor {
  next = 0;
  constructor(readonly size: number) {}
}

/** How many workers a list gets: the limit (at least one), never more than it has items. */
function workersFor(limit: number, size: number): number {
  return Math.min(size, Math.max(1, Math.trunc(limit) || 1));
}

async function runWorkers(count: number, cursor: Cursor, run: (index: number) => Promise<void>, stop: Stop): Promise<void> {
  await Promise.all(Array.from({ length: count }, () => work(cursor, run, stop)));
}

/** One worker: takes the next index until none is left or the pool stops. */
async function work(cursor: Cursor, run: (index: number) => Promise<void>, stop: Stop): Promise<void> {
  while (cursor.next < cursor.size && !stop.failed && !stop.signal?.aborted) {
    try {
      await run(cursor.next++);
    } catch (err) {
      stop.failed = true;
      throw err;
    }
  }
}

function indexesByKey<T>(items: readonly T[], keyOf: (item: T) => string): number[][] {
  const queues = new Map<string, number[]>();
  items.forEach((item, i) => {
    const key = keyOf(item);
    const queue = queues.get(key);
    if (queue) queue.push(i);
    else queues.set(key, [i]);
  });
  return [...queues.values()];
}
