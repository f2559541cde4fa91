import { DEFAULT_ATTEMPT_TIMEOUT_MS } from '../../../src/validation/delivery';
import {
  attemptTimeline,
  backoffDelay,
  defaultPolicy,
  JITTERS,
  previewSchedule,
  seededRandom,
  type BackoffPolicy,
} from '../../../src/policy';
import { quantile } from '../../../src/policy/schedule';

const THREE_MINUTES = 180_000;

describe('the reconnect guarantee: with the defaults, three attempts within the first three minutes', () => {
  // Each wait is non-decreasing in its own draw, and a decorrelated wait also in the previous wait, so
  // every attempt time is non-decreasing in every draw: all draws at the top of their range (the
  // supremum 1 of Math.random's [0, 1)) give the latest each attempt can possibly come.
  const worst = () => 1;

  test.each(JITTERS)('every wait is non-decreasing in its draw (%s)', (jitter) => {
    const p: BackoffPolicy = { ...defaultPolicy('event'), jitter };
    for (const attempts of [1, 2, 3, 10]) {
      for (const previousDelay of [null, 200, 900]) {
        const waits = Array.from({ length: 1_001 }, (_, i) => backoffDelay(p, { attempts, previousDelay }, () => i / 1_000));
        waits.slice(1).forEach((w, i) => expect(w).toBeGreaterThanOrEqual(waits[i]!));
      }
    }
    const low = backoffDelay(p, { attempts: 2, previousDelay: 200 }, () => 0.5);
    expect(backoffDelay(p, { attempts: 2, previousDelay: 900 }, () => 0.5)).toBeGreaterThanOrEqual(low);
  });

  test.each([
    ['telemetry QoS 1', defaultPolicy('telemetry', 1)],
    ['event', defaultPolicy('event')],
    ['command response', defaultPolicy('command-response')],
  ])('%s: attempt 3 by 3 min in the worst case, even when each failed attempt runs to its timeout', (_kind, policy) => {
    const { offsets } = attemptTimeline(policy, worst, { attempts: 3, attemptMs: DEFAULT_ATTEMPT_TIMEOUT_MS });
    expect(offsets).toHaveLength(3);
    expect(offsets[2]!).toBeLessThanOrEqual(THREE_MINUTES);
  });

  test.each(JITTERS)('the worst case bounds 10,000 real draws, which come close to it (%s)', (jitter) => {
    const policy: BackoffPolicy = { ...defaultPolicy('event'), jitter };
    const latest = attemptTimeline(policy, worst, { attempts: 6 }).offsets;
    const random = seededRandom(1);
    const highest = latest.map(() => 0);
    for (let d = 0; d < 10_000; d++) {
      attemptTimeline(policy, random, { attempts: 6 }).offsets.forEach((t, i) => (highest[i] = Math.max(highest[i]!, t)));
    }
    highest.forEach((h, i) => expect(h).toBeLessThanOrEqual(latest[i]!));
    // a bound that real draws approach, not one far above them (later attempts need many high draws in a row)
    expect(highest[2]!).toBeGreaterThanOrEqual(latest[2]! * 0.9);
  });

  test.each(JITTERS)('holds for every jitter strategy with the other defaults (%s)', (jitter) => {
    const { offsets } = attemptTimeline({ ...defaultPolicy('event'), jitter }, worst, {
      attempts: 3,
      attemptMs: DEFAULT_ATTEMPT_TIMEOUT_MS,
    });
    expect(offsets[2]!).toBeLessThanOrEqual(THREE_MINUTES);
  });
});

describe('attemptTimeline', () => {
  test('attempt times are the running sum of attempt durations and waits', () => {
    const policy: BackoffPolicy = { ...defaultPolicy('event'), jitter: 'none' };
    expect(attemptTimeline(policy, seededRandom(1), { attempts: 5, attemptMs: 1_000 }).offsets).toEqual([0, 1_200, 2_600, 4_400, 7_000]);
  });

  test('stops at the age bound, and at max attempts', () => {
    const aged: BackoffPolicy = { ...defaultPolicy('event'), jitter: 'none', maxAge: 1_000 };
    expect(attemptTimeline(aged, seededRandom(1), { attempts: 20 })).toEqual({ offsets: [0, 200, 600], ending: 'expired' });
    const capped: BackoffPolicy = { ...defaultPolicy('event'), maxAttempts: 4 };
    expect(attemptTimeline(capped, seededRandom(1), { attempts: 20 })).toMatchObject({ offsets: expect.any(Array), ending: 'exhausted' });
    expect(attemptTimeline(capped, seededRandom(1), { attempts: 20 }).offsets).toHaveLength(4);
  });

  test('a deadline counts from startAt', () => {
    const startAt = Date.UTC(2030, 0, 1);
    const policy: BackoffPolicy = { ...defaultPolicy('event'), jitter: 'none', maxAge: null, deadline: startAt + 700 };
    expect(attemptTimeline(policy, seededRandom(1), { attempts: 10, startAt })).toEqual({ offsets: [0, 200, 600], ending: 'expired' });
  });
});

describe('previewSchedule', () => {
  test('per attempt: min ≤ median ≤ p95, rising from attempt to attempt, over every draw', () => {
    const preview = previewSchedule(defaultPolicy('event'), seededRandom(5), { attempts: 12, draws: 10_000 });
    expect(preview.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(preview.attempts[0]).toEqual({ attempt: 1, draws: 10_000, minMs: 0, medianMs: 0, p95Ms: 0 });
    for (const a of preview.attempts) {
      expect(a.draws).toBe(10_000);
      expect(a.minMs).toBeLessThanOrEqual(a.medianMs);
      expect(a.medianMs).toBeLessThanOrEqual(a.p95Ms);
    }
    preview.attempts.slice(1).forEach((a, i) => expect(a.medianMs).toBeGreaterThan(preview.attempts[i]!.medianMs));
    expect(preview.endings).toEqual({ expired: 0, exhausted: 0, ongoing: 10_000 });
  });

  test('draws that expire early count only for the attempts they reached', () => {
    const policy: BackoffPolicy = { ...defaultPolicy('event'), maxAge: 5_000 };
    const preview = previewSchedule(policy, seededRandom(2), { attempts: 30, draws: 2_000 });
    const reached = preview.attempts.map((a) => a.draws);
    expect(reached[0]).toBe(2_000);
    reached.slice(1).forEach((n, i) => expect(n).toBeLessThanOrEqual(reached[i]!));
    expect(preview.endings.expired).toBe(2_000);
    for (const a of preview.attempts) expect(a.p95Ms).toBeLessThanOrEqual(5_000);
  });

  test('the same seed gives the same preview', () => {
    const run = () => previewSchedule(defaultPolicy('telemetry'), seededRandom(9), { attempts: 10, draws: 1_000 });
    expect(run()).toEqual(run());
  });

  test('quantile is nearest-rank', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect([quantile(sorted, 0.5), quantile(sorted, 0.95), quantile(sorted, 0.01), quantile(sorted, 1)]).toEqual([5, 10, 1, 10]);
  });
});
