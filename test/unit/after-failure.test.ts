import { classify, type TransportOutcome, type Verdict } from '../../src/classify';
import { afterFailure, ATTEMPT_LOG_SIZE, logAttempt } from '../../src/delivery/after-failure';
import { HELD_MAX_MS, heldUntil, limitsVerdict, type LimitsRefusal } from '../../src/delivery/limits-verdict';
import { validateDelivery } from '../../src/validation/delivery';

// The rules a delivery follows after a failed attempt and when the endpoint's limits hold an attempt back:
// the same for the workflow's own attempts and for the retrying activity's (docs/retries.md).

const T0 = Date.parse('2026-11-21T12:00:00Z');
// no jitter: 1 s, 2 s, 4 s, …
const POLICY = { jitter: 'none', initial: 1_000, min: 0, multiplier: 2 };
const delivery = (overrides: Record<string, unknown> = {}) =>
  validateDelivery(
    { kind: 'event', tenant: 'acme', device: 'd', target: 'https://ingest.example.com/e', payload: {}, policy: POLICY, ...overrides },
    { now: T0 },
  );
const half = () => 0.5;
const http503 = { class: 'server', reason: 'HTTP 503' } as const;
const after = (d = delivery(), failure: Parameters<typeof afterFailure>[1] = http503, attempts = 1) =>
  afterFailure(d, failure, { attempts, previousDelay: null, agedFrom: T0, at: T0 + 10 }, half);

describe('after a failed attempt', () => {
  test('a retryable failure waits as the policy says', () => {
    expect(after()).toEqual({ end: null, delay: 1_000, hinted: false });
    expect(after(delivery(), http503, 3)).toEqual({ end: null, delay: 4_000, hinted: false });
  });

  test("a server's Retry-After longer than the backoff sets the wait, and says so", () => {
    const next = after(delivery(), { class: 'well-known', reason: 'HTTP 429', retryAfterMs: 60_000 });
    expect(next).toMatchObject({ end: null, hinted: true });
    expect(next.end === null && next.delay).toBeGreaterThanOrEqual(60_000);
  });

  test('a client error is rejected at once, with its reason', () => {
    expect(after(delivery(), { class: 'client', reason: 'HTTP 400' })).toEqual({ end: 'rejected', reason: 'HTTP 400' });
  });

  test('telemetry QoS 0 is dropped whatever the failure: it is sent once', () => {
    const telemetry = delivery({ kind: 'telemetry', qos: 0, policy: undefined });
    for (const failure of [http503, { class: 'client', reason: 'HTTP 400' } as const])
      expect(after(telemetry, failure)).toEqual({ end: 'dropped', reason: `telemetry QoS 0 is sent once; it failed: ${failure.reason}` });
    expect(after(delivery({ kind: 'telemetry', qos: 1 }))).toMatchObject({ end: null });
  });

  test('its last attempt spent, it is exhausted; a wait past its max age, expired; both quote the last error', () => {
    expect(after(delivery({ policy: { ...POLICY, maxAttempts: 2 } }), http503, 2)).toEqual({
      end: 'exhausted',
      reason: '2 of 2 attempts made; last error: HTTP 503',
    });
    const expired = after(delivery({ policy: { ...POLICY, maxAge: '1s' } }), http503, 1);
    expect(expired).toMatchObject({ end: 'expired', reason: expect.stringMatching(/max age of 1 s; last error: HTTP 503$/) });
  });

  // the workflow rejects on the class, the retrying activity rejected on `retryable`: one rule, since the
  // classification makes a failure retryable exactly when its class is not `client`, overrides included
  test.each(['client', 'well-known', 'server', 'connection', 'success'] as Verdict[])(
    'overridden to %s: rejected exactly when not retryable',
    (to) => {
      const outcomes: TransportOutcome[] = [
        { kind: 'http', status: 400 },
        { kind: 'http', status: 429 },
        { kind: 'http', status: 503, headers: { 'retry-after': '5' } },
        { kind: 'network', code: 'ECONNREFUSED' },
        { kind: 'timeout', afterMs: 1_000 },
        { kind: 'mqtt5', packet: 'puback', reasonCode: 0x87 },
      ];
      for (const outcome of outcomes) {
        for (const c of [classify(outcome, {}, T0), classify(outcome, { [classify(outcome, {}, T0).code]: to }, T0)]) {
          if (c.class === 'success') continue;
          expect(after(delivery(), c).end === 'rejected').toBe(!c.retryable);
        }
      }
    },
  );
});

describe('the attempt log', () => {
  test('records an attempt as the status shows it', () => {
    const log = logAttempt([], { attempt: 1, startedAt: T0, durationMs: 12.6, code: 'http-503', ok: false });
    expect(log).toEqual([{ attempt: 1, startedAt: '2026-11-21T12:00:00.000Z', durationMs: 13, code: 'http-503', ok: false }]);
  });

  test(`keeps the latest ${ATTEMPT_LOG_SIZE}, and leaves the log it was given as it was`, () => {
    let log: ReturnType<typeof logAttempt> = [];
    for (let n = 1; n <= ATTEMPT_LOG_SIZE + 5; n++) {
      const before = log;
      log = logAttempt(log, { attempt: n, startedAt: T0 + n, durationMs: 1, code: 'timeout', ok: false });
      expect(before).toHaveLength(Math.min(n - 1, ATTEMPT_LOG_SIZE));
    }
    expect(log.map((a) => a.attempt)).toEqual(Array.from({ length: ATTEMPT_LOG_SIZE }, (_, i) => i + 6));
  });
});

describe("the endpoint's limits", () => {
  const refusal = (r: Partial<LimitsRefusal>): LimitsRefusal => ({
    at: T0 + 500,
    reservedAt: null,
    held: false,
    expired: false,
    disabled: false,
    words: 'e1 is held',
    ...r,
  });

  test('a disabled endpoint rejects the delivery, unsent, until a redrive', () => {
    expect(limitsVerdict(delivery(), refusal({ disabled: true }), { number: 3, holds: 0 })).toEqual({
      end: 'rejected',
      reason: 'e1 is held (attempt 3 was not sent; redrive it once the endpoint is enabled)',
    });
  });

  test('no room before it expires: expired, naming what ran out and the last error when there is one', () => {
    const expired = refusal({ expired: true });
    expect(limitsVerdict(delivery(), expired, { number: 1, holds: 0 })).toEqual({
      end: 'expired',
      reason: 'e1 is held: attempt 1 has no room before the delivery expires',
    });
    expect(limitsVerdict(delivery(), expired, { number: 4, holds: 2, expiry: 'max age', lastError: 'HTTP 503' })).toEqual({
      end: 'expired',
      reason: "e1 is held: attempt 4 has no room before the delivery's max age (last error: HTTP 503)",
    });
  });

  test('telemetry QoS 0 held past its expiry is dropped: sent once or not at all', () => {
    const telemetry = delivery({ kind: 'telemetry', qos: 0, policy: undefined });
    expect(limitsVerdict(telemetry, refusal({ expired: true, held: true }), { number: 1, holds: 0 })).toEqual({
      end: 'dropped',
      reason: 'e1 is held: telemetry QoS 0 is sent once or not at all',
    });
  });

  test('held by the breaker, it comes back at its backoff with one more hold; at the rate, with its slot', () => {
    expect(limitsVerdict(delivery(), refusal({ held: true }), { number: 2, holds: 1 })).toEqual({
      end: null,
      at: T0 + 500,
      hold: { reservedAt: null, holds: 2 },
      words: 'e1 is held (attempt 2)',
    });
    expect(limitsVerdict(delivery(), refusal({ reservedAt: T0 + 500 }), { number: 2, holds: 1 })).toMatchObject({
      hold: { reservedAt: T0 + 500, holds: 1 },
    });
  });

  test('a held attempt comes back at its own backoff, grown by each hold, at most HELD_MAX_MS', () => {
    const at = (attempts: number, holds: number, d = delivery()) =>
      heldUntil(d, { attempts, holds, previousDelay: null, agedFrom: T0, now: T0 }, half);
    expect(at(0, 0)).toBe(T0 + 1_000);
    expect(at(0, 2)).toBe(T0 + 4_000);
    expect(at(2, 0)).toBe(T0 + 4_000);
    expect(at(0, 30)).toBe(T0 + HELD_MAX_MS);
    expect(at(0, 3, delivery({ policy: { ...POLICY, maxAge: '5s' } }))).toBeNull();
    expect(at(0, 0, delivery({ kind: 'telemetry', qos: 0, policy: undefined }))).toBeNull();
  });
});
