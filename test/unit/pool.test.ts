import { Bulkhead, forEachBounded, forEachBoundedByKey, mapBounded } from '../../src/concurrency/pool';

/** A task that records how many run at once and waits for the test to let each one end. */
function gate() {
  let running = 0;
  let peak = 0;
  const started: number[] = [];
  const open = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  const task = (item: number) =>
    new Promise<void>((resolve, reject) => {
      running++;
      peak = Math.max(peak, running);
      started.push(item);
      open.set(item, {
        resolve: () => (running--, resolve()),
        reject: (err) => (running--, reject(err)),
      });
    });
  return { task, started, open, peak: () => peak };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('mapBounded', () => {
  it('gives every result in the order given, however they finish', async () => {
    const delays = [30, 5, 20, 0, 10];
    const results = await mapBounded(delays, 2, async (ms, i) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return `${i}:${ms}`;
    });
    expect(results).toEqual(['0:30', '1:5', '2:20', '3:0', '4:10']);
  });

  it('runs at most the limit at once, in the order given, and one at a time for a limit below 1', async () => {
    for (const [limit, expected] of [
      [3, 3],
      [0, 1],
    ] as const) {
      let running = 0;
      let peak = 0;
      const started: number[] = [];
      await forEachBounded([1, 2, 3, 4, 5, 6, 7], limit, async (n) => {
        started.push(n);
        peak = Math.max(peak, ++running);
        await tick();
        running--;
      });
      expect(peak).toBe(expected);
      expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
    }
  });

  it('rejects with the first failure, and starts nothing after it', async () => {
    const g = gate();
    const all = forEachBounded([1, 2, 3, 4, 5], 2, g.task);
    await tick();
    g.open.get(1)!.reject(new Error('one failed'));
    await expect(all).rejects.toThrow('one failed');
    g.open.get(2)!.resolve();
    await tick();
    expect(g.started).toEqual([1, 2]);
  });

  it('starts nothing once its signal aborts, and resolves when those in flight end', async () => {
    const g = gate();
    const controller = new AbortController();
    const all = forEachBounded([1, 2, 3, 4], 2, g.task, { signal: controller.signal });
    await tick();
    controller.abort();
    g.open.get(1)!.resolve();
    g.open.get(2)!.resolve();
    await all;
    expect(g.started).toEqual([1, 2]);
  });

  it('resolves at once for no items', async () => {
    await expect(mapBounded([], 4, () => Promise.reject(new Error('never')))).resolves.toEqual([]);
  });
});

describe('forEachBoundedByKey', () => {
  it('bounds each key and the whole, each key in order, keys beyond the bound as others finish', async () => {
    const items = [
      { key: 'a', n: 1 },
      { key: 'a', n: 2 },
      { key: 'a', n: 3 },
      { key: 'b', n: 4 },
      { key: 'c', n: 5 },
    ];
    const running = new Map<string, number>();
    let peak = 0;
    const peakPerKey = new Map<string, number>();
    const order: number[] = [];
    await forEachBoundedByKey(
      items,
      (i) => i.key,
      { limit: 3, perKey: 2 },
      async ({ key, n }) => {
        order.push(n);
        running.set(key, (running.get(key) ?? 0) + 1);
        peak = Math.max(
          peak,
          [...running.values()].reduce((a, b) => a + b, 0),
        );
        peakPerKey.set(key, Math.max(peakPerKey.get(key) ?? 0, running.get(key)!));
        await tick();
        running.set(key, running.get(key)! - 1);
      },
    );
    expect(peak).toBe(3);
    expect(peakPerKey.get('a')).toBe(2);
    // a's two lanes and b's take the three places; c waits for a lane's key to run dry
    expect(order.indexOf(5)).toBeGreaterThan(order.indexOf(4));
    expect(order.filter((n) => n <= 3)).toEqual([1, 2, 3]);
  });

  it('rejects with the first failure, and no key starts another item after it', async () => {
    const started: string[] = [];
    const all = forEachBoundedByKey(
      ['a1', 'a2', 'b1', 'b2'],
      (s) => s[0]!,
      { limit: 2, perKey: 1 },
      async (s) => {
        started.push(s);
        await tick();
        if (s === 'a1') throw new Error('a1 failed');
        await tick();
      },
    );
    await expect(all).rejects.toThrow('a1 failed');
    await tick();
    await tick();
    expect(started).toEqual(['a1', 'b1']);
  });
});

describe('Bulkhead', () => {
  it('runs at most its limit at once; the others start in the order they came as slots free', async () => {
    const bulkhead = new Bulkhead(2);
    const g = gate();
    const runs = [1, 2, 3, 4].map((n) => bulkhead.run(() => g.task(n)));
    await tick();
    expect(g.started).toEqual([1, 2]);
    g.open.get(2)!.resolve();
    await tick();
    expect(g.started).toEqual([1, 2, 3]);
    g.open.get(1)!.reject(new Error('failed'));
    await expect(runs[0]).rejects.toThrow('failed');
    await tick();
    // a failure frees its slot as well
    expect(g.started).toEqual([1, 2, 3, 4]);
    g.open.get(3)!.resolve();
    g.open.get(4)!.resolve();
    await Promise.all(runs.slice(1));
    expect(g.peak()).toBe(2);
  });
});
