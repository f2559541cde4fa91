import { RetryBudget } from '../../src/endpoints/budget';

const T0 = Date.parse('2026-11-21T12:00:00Z');

describe('the retry budget (GCRA per endpoint)', () => {
  test('a burst goes out at once, then one slot per 1/rate, reserved in order', () => {
    const budget = new RetryBudget({ perSecond: 10, burst: 5 });
    const grants = Array.from({ length: 8 }, () => budget.acquire('e', T0));
    expect(grants.slice(0, 5)).toEqual(Array(5).fill({ now: true }));
    expect(grants.slice(5).map((g) => (g.now ? 0 : g.at - T0))).toEqual([100, 200, 300]);
    // another endpoint has a budget of its own
    expect(budget.acquire('other', T0)).toEqual({ now: true });
  });

  test('over any window, at most burst + window × rate slots fall in it', () => {
    const budget = new RetryBudget({ perSecond: 10, burst: 20 });
    const at: number[] = [];
    // 1,000 retries asking within the first second
    for (let i = 0; i < 1_000; i++) {
      const g = budget.acquire('e', T0 + i);
      at.push(g.now ? T0 + i : g.at);
    }
    for (const start of at) expect(at.filter((t) => t >= start && t < start + 10_000).length).toBeLessThanOrEqual(20 + 100);
    // and the queue drains at the rate: the last slot 98 s out
    expect(Math.max(...at) - T0).toBeGreaterThanOrEqual(97_000);
  });

  test("a worker's share of 1/2 halves its rate and burst", () => {
    const budget = new RetryBudget({ perSecond: 10, burst: 10 });
    const grants = Array.from({ length: 7 }, () => budget.acquire('e', T0, 0.5));
    expect(grants.filter((g) => g.now)).toHaveLength(5);
    expect(grants.slice(5).map((g) => (g.now ? 0 : g.at - T0))).toEqual([200, 400]);
  });

  test('admit holds reserved slots that come due together to the rate, without reserving', () => {
    const budget = new RetryBudget({ perSecond: 10, burst: 2 });
    // three reserved slots whose timers fired late, at the same instant
    expect(budget.admit('e', T0)).toEqual({ now: true });
    expect(budget.admit('e', T0)).toEqual({ now: true });
    expect(budget.admit('e', T0)).toEqual({ now: false, at: T0 + 100 });
    // told to come back, it did not take the slot: asking at that time, it goes
    expect(budget.admit('e', T0 + 100)).toEqual({ now: true });
  });

  test("a slot after the delivery's expiry is told, not taken: the next retry gets it", () => {
    const budget = new RetryBudget({ perSecond: 1, burst: 1 });
    expect(budget.acquire('e', T0)).toEqual({ now: true });
    expect(budget.acquire('e', T0, 1, T0 + 500)).toEqual({ now: false, at: T0 + 1_000 });
    expect(budget.acquire('e', T0)).toEqual({ now: false, at: T0 + 1_000 });
  });

  test('nonsense settings are refused, naming them', () => {
    expect(() => new RetryBudget({ perSecond: 0, burst: 1 })).toThrow(/perSecond/);
    expect(() => new RetryBudget({ perSecond: 1, burst: 0 })).toThrow(/burst/);
  });
});
