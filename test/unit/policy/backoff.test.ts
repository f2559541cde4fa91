import {
  backoffWindow,
  defaultPolicy,
  nextDelay,
  seededRandom,
  type BackoffPolicy,
  type RetryDecision,
  type RetryState,
} from '../../../src/policy';

const DRAWS = 10_000;
const policy = (over: Partial<BackoffPolicy> = {}): BackoffPolicy => ({ ...defaultPolicy('event'), maxAge: null, ...over });
const at = (attempts: number, previousDelay: number | null = null): RetryState => ({ attempts, previousDelay, firstAttemptAt: 0, now: 0 });
const delayOf = (d: RetryDecision): number => {
  if (!d.retry) throw new Error(`expected a retry, got ${d.outcome}: ${d.reason}`);
  return d.delay;
};
/** Delays after attempts 1..n with every draw from `random`, feeding each delay back as the previous one. */
function sequence(p: BackoffPolicy, n: number, random: () => number): number[] {
  const delays: number[] = [];
  for (let attempts = 1; attempts <= n; attempts++) delays.push(delayOf(nextDelay(p, at(attempts, delays.at(-1) ?? null), random)));
  return delays;
}
const noRandom = () => {
  throw new Error('jitter none must not draw');
};

describe('none: the window itself', () => {
  test('doubles from 200 ms and stops at the 300 s cap', () => {
    expect(sequence(policy({ jitter: 'none' }), 13, noRandom)).toEqual([
      200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 51_200, 102_400, 204_800, 300_000, 300_000,
    ]);
  });

  test('any multiplier, rounded to whole ms', () => {
    expect(sequence(policy({ jitter: 'none', initial: 100, multiplier: 1.5, min: 0 }), 5, noRandom)).toEqual([100, 150, 225, 338, 506]);
    expect(sequence(policy({ jitter: 'none', initial: 1_000, multiplier: 1, min: 0 }), 3, noRandom)).toEqual([1_000, 1_000, 1_000]);
  });

  test('min is a floor under the window', () => {
    expect(sequence(policy({ jitter: 'none', initial: 50, min: 120 }), 4, noRandom)).toEqual([120, 120, 200, 400]);
  });

  test('a very late attempt still waits max, not Infinity or NaN', () => {
    expect(delayOf(nextDelay(policy({ jitter: 'none' }), at(5_000), noRandom))).toBe(300_000);
  });
});

describe(`random strategies: bounds over ${DRAWS} draws`, () => {
  const random = seededRandom(42);
  const draws = (p: BackoffPolicy, attempts: number, previousDelay: number | null = null) =>
    Array.from({ length: DRAWS }, () => delayOf(nextDelay(p, at(attempts, previousDelay), random)));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  test.each([1, 4, 12, 20])('full, after attempt %i: in [min, window], spread over all of it', (attempts) => {
    const p = policy({ jitter: 'full', min: 0 });
    const w = backoffWindow(p, attempts);
    const ds = draws(p, attempts);
    expect(Math.min(...ds)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...ds)).toBeLessThanOrEqual(w);
    expect(Math.min(...ds)).toBeLessThan(w * 0.01);
    expect(Math.max(...ds)).toBeGreaterThan(w * 0.99);
    expect(mean(ds) / w).toBeCloseTo(0.5, 1);
  });

  test('full with the default floor: never under 200 ms', () => {
    const ds = draws(policy({ jitter: 'full' }), 3);
    expect(Math.min(...ds)).toBe(200);
    expect(Math.max(...ds)).toBeLessThanOrEqual(800);
    // a quarter of the draws fall under the floor and are lifted to it
    expect(ds.filter((d) => d === 200).length / DRAWS).toBeCloseTo(0.25, 1);
  });

  test.each([1, 5, 12, 20])('equal, after attempt %i: in [window/2, window]', (attempts) => {
    const p = policy({ jitter: 'equal', min: 0 });
    const w = backoffWindow(p, attempts);
    const ds = draws(p, attempts);
    expect(Math.min(...ds)).toBeGreaterThanOrEqual(Math.floor(w / 2));
    expect(Math.max(...ds)).toBeLessThanOrEqual(w);
    expect(Math.min(...ds)).toBeLessThan(w * 0.51);
    expect(mean(ds) / w).toBeCloseTo(0.75, 1);
  });

  test.each([null, 200, 1_000, 150_000])('decorrelated after a wait of %p: in [initial, min(max, 3 × previous)]', (previous) => {
    const p = policy({ jitter: 'decorrelated', min: 0 });
    const high = Math.min(p.max, 3 * (previous ?? p.initial));
    const ds = draws(p, 3, previous);
    expect(Math.min(...ds)).toBeGreaterThanOrEqual(p.initial);
    expect(Math.max(...ds)).toBeLessThanOrEqual(high);
    expect(Math.max(...ds)).toBeGreaterThan(p.initial + (high - p.initial) * 0.99);
  });

  test('decorrelated ignores the multiplier and the attempt number: only the previous wait matters', () => {
    const p = policy({ jitter: 'decorrelated', multiplier: 10 });
    expect(delayOf(nextDelay(p, at(1, 1_000), () => 0.5))).toBe(delayOf(nextDelay(p, at(30, 1_000), () => 0.5)));
  });

  test('the same draws give the same delays (what replay relies on)', () => {
    const p = policy({ jitter: 'decorrelated' });
    expect(sequence(p, 30, seededRandom(7))).toEqual(sequence(p, 30, seededRandom(7)));
    expect(sequence(p, 30, seededRandom(7))).not.toEqual(sequence(p, 30, seededRandom(8)));
  });
});

describe('server hints', () => {
  const p = policy({ jitter: 'none' });

  test('a hint longer than the computed wait replaces it, stretched by at most 10%', () => {
    const random = seededRandom(3);
    const decisions = Array.from({ length: DRAWS }, () => nextDelay(p, at(1), random, 5_000));
    expect(decisions.every((d) => d.retry && d.hinted)).toBe(true);
    const delays = decisions.map(delayOf);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(5_000);
    expect(Math.max(...delays)).toBeLessThanOrEqual(5_500);
    // spread over the whole stretch, so that deliveries parked on the same hint do not wake together
    expect(Math.min(...delays)).toBeLessThan(5_010);
    expect(Math.max(...delays)).toBeGreaterThan(5_490);
  });

  test('the stretch is capped at 30 s for long hints', () => {
    expect(delayOf(nextDelay(p, at(1), () => 0.999999, 3_600_000))).toBe(3_630_000);
  });

  test('a hint shorter than the computed wait changes nothing', () => {
    const d = nextDelay(p, at(5), noRandom, 1_000); // window 3.2 s
    expect(d).toEqual({ retry: true, delay: 3_200, hinted: false });
  });

  test('a hint that is not a finite number is ignored', () => {
    for (const hint of [NaN, Infinity, -Infinity, -5_000]) {
      expect(nextDelay(p, at(1), noRandom, hint)).toEqual({ retry: true, delay: 200, hinted: false });
    }
  });
});

describe('bounds: expire now instead of sleeping in vain', () => {
  const p = policy({ jitter: 'none', maxAge: 60_000 });
  const state = (now: number): RetryState => ({ attempts: 1, previousDelay: null, firstAttemptAt: 1_000, now });

  test('a wait that would pass the max age ends the delivery as expired', () => {
    const d = nextDelay(p, state(1_000 + 60_000 - 199), noRandom);
    expect(d).toMatchObject({ retry: false, outcome: 'expired' });
    expect(!d.retry && d.reason).toMatch(/max age of 1 min/);
  });

  test('a wait that lands exactly on the max age still happens', () => {
    expect(nextDelay(p, state(1_000 + 60_000 - 200), noRandom)).toEqual({ retry: true, delay: 200, hinted: false });
  });

  test('a hinted wait past the max age expires too', () => {
    expect(nextDelay(p, state(1_000), () => 0, 120_000)).toMatchObject({ retry: false, outcome: 'expired' });
  });

  test('a wait that would pass the deadline ends the delivery as expired', () => {
    const deadline = Date.UTC(2030, 0, 1);
    const q = policy({ jitter: 'none', deadline });
    const near: RetryState = { attempts: 1, previousDelay: null, firstAttemptAt: deadline - 10_000, now: deadline - 100 };
    const d = nextDelay(q, near, noRandom);
    expect(d).toMatchObject({ retry: false, outcome: 'expired' });
    expect(!d.retry && d.reason).toContain('2030-01-01T00:00:00.000Z');
    expect(nextDelay(q, { ...near, now: deadline - 200 }, noRandom)).toMatchObject({ retry: true, delay: 200 });
  });

  test('maxAttempts counts attempts in all: after the last one, exhausted', () => {
    const q = policy({ jitter: 'none', maxAttempts: 3 });
    expect(nextDelay(q, at(2), noRandom)).toMatchObject({ retry: true });
    expect(nextDelay(q, at(3), noRandom)).toEqual({ retry: false, outcome: 'exhausted', reason: '3 of 3 attempts made' });
  });

  test('maxAttempts 0 never exhausts', () => {
    expect(nextDelay(policy({ maxAttempts: 0 }), at(1_000_000), () => 0.5)).toMatchObject({ retry: true });
  });

  test('telemetry QoS 0 gets no retry', () => {
    expect(nextDelay(defaultPolicy('telemetry', 0), at(1), noRandom)).toMatchObject({ retry: false, outcome: 'exhausted' });
  });

  test('attempts counts attempts made, so it starts at 1', () => {
    expect(() => nextDelay(p, at(0), noRandom)).toThrow(/attempts must be a whole number ≥ 1/);
  });
});
