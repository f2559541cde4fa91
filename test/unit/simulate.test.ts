import { seededRandom } from '../../src/policy';
import { backoffOf, runContention, runExperiment, STRATEGIES } from '../../src/simulate';
import { EventQueue } from '../../src/simulate/event-queue';

describe('EventQueue', () => {
  test('earliest first; same instant in the order scheduled', () => {
    const q = new EventQueue<string>();
    const random = seededRandom(1);
    const times = Array.from({ length: 500 }, () => Math.floor(random() * 50));
    times.forEach((t, i) => q.push(t, `${t}:${i}`));
    const out: string[] = [];
    for (let e = q.pop(); e; e = q.pop()) out.push(e.event);
    const expected = times
      .map((t, i) => ({ t, i }))
      .sort((a, b) => a.t - b.t || a.i - b.i)
      .map(({ t, i }) => `${t}:${i}`);
    expect(out).toEqual(expected);
    expect(q.size).toBe(0);
  });
});

describe("the article's backoff formulas, on redeliver's engine", () => {
  const random = seededRandom(3);

  test('exponential: min(cap, base × 2^n) after n failures', () => {
    const b = backoffOf('exponential', 5, 2_000);
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => b(n, null, random))).toEqual([10, 20, 40, 80, 160, 320, 640, 1_280, 2_000]);
  });

  test('full: random(0, min(cap, base × 2^n)); equal: the upper half of it; none: 0', () => {
    const full = Array.from({ length: 10_000 }, () => backoffOf('full', 5, 2_000)(3, null, random));
    expect([Math.min(...full), Math.max(...full)]).toEqual([0, 40]);
    const equal = Array.from({ length: 10_000 }, () => backoffOf('equal', 5, 2_000)(3, null, random));
    expect([Math.min(...equal), Math.max(...equal)]).toEqual([20, 40]);
    expect(backoffOf('no-backoff', 5, 2_000)(7, null, random)).toBe(0);
  });

  test('decorrelated: random(base, 3 × previous sleep), capped', () => {
    const d = Array.from({ length: 10_000 }, () => backoffOf('decorrelated', 5, 2_000)(4, 100, random));
    expect([Math.min(...d), Math.max(...d)]).toEqual([5, 300]);
    expect(backoffOf('decorrelated', 5, 2_000)(4, 1_500, () => 0.999)).toBe(2_000);
  });
});

describe('runContention', () => {
  const fixedNetwork = { networkMeanMs: 10, networkSdMs: 0 };

  test('one client: read, reply, write, reply — one call, four network trips', () => {
    expect(runContention({ clients: 1, backoff: backoffOf('full', 5, 2_000), random: seededRandom(1), ...fixedNetwork })).toEqual({
      calls: 1,
      completionMs: 40,
    });
  });

  test('two clients without backoff: one write loses, is read again and retried', () => {
    // both read version 0 at 10 ms and write at 30 ms; the second write fails, its client reads again at 50 ms
    expect(runContention({ clients: 2, backoff: backoffOf('no-backoff', 5, 2_000), random: seededRandom(1), ...fixedNetwork })).toEqual({
      calls: 3,
      completionMs: 80,
    });
  });

  test('every client gets its write in: at least one call each, and the same seed gives the same run', () => {
    for (const strategy of STRATEGIES) {
      const run = () => runContention({ clients: 30, backoff: backoffOf(strategy, 5, 2_000), random: seededRandom(11) });
      const result = run();
      expect(result.calls).toBeGreaterThanOrEqual(30);
      expect(result).toEqual(run());
    }
  });
});

describe('runExperiment', () => {
  test("a strategy's numbers do not depend on which others ran with it", () => {
    const all = runExperiment({ clients: 20, runs: 10, strategies: STRATEGIES, seed: 4 });
    const alone = runExperiment({ clients: 20, runs: 10, strategies: ['equal'], seed: 4 });
    expect(alone).toEqual([all.find((r) => r.strategy === 'equal')]);
  });

  test('means over the runs', () => {
    const [one] = runExperiment({ clients: 1, runs: 5, strategies: ['full'] });
    expect(one).toMatchObject({ strategy: 'full', clients: 1, runs: 5, calls: 1 });
    // four network trips of |N(10 ms, 2 ms)|
    expect(one!.completionMs).toBeGreaterThan(30);
    expect(one!.completionMs).toBeLessThan(50);
  });
});
