import { ApplicationFailure } from '@temporalio/common';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { type AttemptFailureDetails, type CarriedState, type RetryProgress } from '../../src/contract';
import { validateDelivery } from '../../src/validation/delivery';
import { DeliveryTracker } from '../../src/workflows/delivery-state';

// A delivery's state and decisions without a server: the workflow runs them (workflows/delivery.ts), and
// the search attribute updates recorded here are the commands its history holds.

const T0 = Date.parse('2026-11-21T12:00:00Z');
const iso = (t: number) => new Date(t).toISOString();
const input = {
  kind: 'event',
  tenant: 'acme',
  device: 'sensor-1',
  messageId: 'm-1',
  target: 'https://ingest.example.com/events',
  payload: { t: 1 },
};
// no jitter: 1 s, 2 s, 4 s, …
const POLICY = { jitter: 'none', initial: 1_000, min: 0, multiplier: 2 };
const http503: AttemptFailureDetails = {
  class: 'server',
  retryable: true,
  code: 'http-503',
  reason: 'HTTP 503 Service Unavailable',
  durationMs: 12,
};
const refused: AttemptFailureDetails = {
  class: 'connection',
  retryable: true,
  code: 'net-ECONNREFUSED',
  reason: 'connection refused',
  durationMs: 3,
};
const http400: AttemptFailureDetails = {
  class: 'client',
  retryable: false,
  code: 'http-400',
  reason: 'HTTP 400 Bad Request',
  durationMs: 5,
};

function tracked(overrides: Record<string, unknown> = {}, carried?: CarriedState) {
  const delivery = validateDelivery({ ...input, policy: POLICY, ...overrides }, { now: T0 });
  const clock = { t: T0 };
  const upserts: Record<string, unknown>[] = [];
  const details: string[] = [];
  const effects = {
    details: (words: string) => details.push(words),
    upsert: (pairs: SearchAttributeUpdatePair[]) => upserts.push(Object.fromEntries(pairs.map((p) => [p.key.name, p.value]))),
    warn: () => undefined,
  };
  const d = new DeliveryTracker(delivery, carried, { effects, now: () => clock.t, random: () => 0.5 });
  /** One attempt made by the workflow, `ms` long, failing with `failure` (or delivered). */
  const attempt = (failure: AttemptFailureDetails | null, ms = 10) => {
    const { startedAt } = d.startAttempt();
    clock.t += ms;
    if (failure) return d.failed(failure, startedAt);
    return d.delivered({ code: 'http-200', reason: 'HTTP 200', durationMs: ms } as never, startedAt);
  };
  /** Waits for the planned turn as the timer would. */
  const turn = () => {
    const wait = d.waitBeforeTurn();
    if (wait) clock.t += wait.ms;
    expect(d.waitBeforeTurn()).toBeNull();
    d.turnTaken();
  };
  return { d, delivery, clock, upserts, details, attempt, turn };
}

function refusal(fn: () => void): { type: string | undefined; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApplicationFailure) return { type: err.type ?? undefined, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('attempts and their outcomes', () => {
  test('a failed attempt plans the next one: waiting, its error, its log line, and one search attribute update', () => {
    const { d, clock, upserts, details } = tracked();
    expect(d.status()).toMatchObject({ state: 'pending', attempts: 0, summary: 'starting', lastError: null });
    const { attempt, startedAt } = d.startAttempt();
    expect({ attempt, startedAt }).toEqual({ attempt: 1, startedAt: T0 });
    // attempting is too short-lived for the list: no update
    expect(d.status()).toMatchObject({ state: 'attempting', summary: 'attempt 1 in progress' });
    expect(upserts).toEqual([]);
    clock.t += 50;
    expect(d.failed(http503, startedAt)).toBeNull();
    expect(upserts).toEqual([{ DeliveryState: 'waiting', Attempts: 1, LastErrorClass: 'server' }]);
    expect(d.status()).toMatchObject({
      state: 'waiting',
      attempts: 1,
      firstAttemptAt: iso(T0),
      lastAttemptAt: iso(T0 + 50),
      nextAttemptAt: iso(T0 + 50 + 1_000),
      lastError: { class: 'server', code: 'http-503', reason: 'HTTP 503 Service Unavailable', attempt: 1, at: iso(T0 + 50) },
      attemptLog: [{ attempt: 1, startedAt: iso(T0), durationMs: 12, code: 'http-503', ok: false }],
    });
    // the same sentence in the status and in the UI's current details
    expect(details).toEqual(['attempt 1 in progress', d.status().summary]);
    expect(d.status().summary).toMatch(/^waiting 1 s after HTTP 503 — attempt 2 next, expires in 6 d 23 h/);
  });

  // as recorded: DeliveryState says waiting again after each attempt (attempting is not in the list)
  test('the list hears of every failed attempt, and of the error class only when it changes', () => {
    const { d, upserts, attempt, turn } = tracked();
    attempt(http503);
    turn();
    attempt(http503);
    turn();
    attempt(refused);
    expect(upserts).toEqual([
      { DeliveryState: 'waiting', Attempts: 1, LastErrorClass: 'server' },
      { DeliveryState: 'waiting', Attempts: 2 },
      { DeliveryState: 'waiting', Attempts: 3, LastErrorClass: 'connection' },
    ]);
    // the waits double: 1 s, 2 s, then 4 s
    expect(d.status().nextAttemptAt).toBe(iso(T0 + 10 + 1_000 + 10 + 2_000 + 10 + 4_000));
  });

  test('delivered: the result names the attempt, keeps each attempt with its verdict and the policy in words, and no copy of the message', () => {
    const { d, upserts, attempt, turn } = tracked();
    attempt(http503);
    turn();
    const result = attempt(null);
    expect(result).toEqual({
      deliveryId: 'delivery/acme/sensor-1/m-1',
      messageId: 'm-1',
      outcome: 'delivered',
      attempts: 2,
      firstAttemptAt: iso(T0),
      lastAttemptAt: iso(T0 + 10 + 1_000 + 10),
      lastError: expect.objectContaining({ code: 'http-503', attempt: 1 }),
      reason: 'HTTP 200 on attempt 2',
      attemptLog: [
        {
          attempt: 1,
          startedAt: iso(T0),
          durationMs: 12,
          code: 'http-503',
          ok: false,
          class: 'server',
          answer: 'HTTP 503 Service Unavailable',
        },
        { attempt: 2, startedAt: iso(T0 + 10 + 1_000), durationMs: 10, code: 'http-200', ok: true, class: 'success', answer: 'HTTP 200' },
      ],
      policy: expect.stringMatching(/^no jitter .* window 1 s ×2 per attempt up to 5 min; unlimited attempts; expires 7 d/),
    });
    expect(upserts.at(-1)).toEqual({ DeliveryState: 'delivered', Attempts: 2 });
    expect(d.status()).toMatchObject({ state: 'delivered', nextAttemptAt: null, summary: 'delivered: HTTP 200 on attempt 2' });
  });

  test('a client error rejects at once and a failed telemetry QoS 0 is dropped: dead letters with the message', () => {
    const rejected = tracked();
    expect(rejected.attempt(http400)).toMatchObject({
      outcome: 'rejected',
      reason: 'HTTP 400 Bad Request',
      attempts: 1,
      message: rejected.delivery,
    });
    expect(rejected.upserts).toEqual([{ DeliveryState: 'rejected', Attempts: 1, LastErrorClass: 'client' }]);

    const dropped = tracked({ kind: 'telemetry', qos: 0, policy: undefined });
    expect(dropped.attempt(http503)).toMatchObject({
      outcome: 'dropped',
      reason: 'telemetry QoS 0 is sent once; it failed: HTTP 503 Service Unavailable',
    });
  });

  test('the policy ends the retrying: exhausted after its attempts, expired when the next wait passes the max age', () => {
    const exhausted = tracked({ policy: { ...POLICY, maxAttempts: 2 } });
    exhausted.attempt(http503);
    exhausted.turn();
    expect(exhausted.attempt(http503)).toMatchObject({
      outcome: 'exhausted',
      reason: '2 of 2 attempts made; last error: HTTP 503 Service Unavailable',
    });

    const expired = tracked({ policy: { ...POLICY, maxAge: '2s' } });
    expired.attempt(http503);
    expired.turn();
    expect(expired.attempt(refused)).toMatchObject({
      outcome: 'expired',
      reason: expect.stringMatching(/would fall after the max age of 2 s; last error: connection refused$/),
    });
    expect(expired.upserts.at(-1)).toEqual({ DeliveryState: 'expired', Attempts: 2, LastErrorClass: 'connection' });
  });

  test('the attempt log keeps the last 20 attempts', () => {
    const { d, attempt, turn } = tracked({ policy: { ...POLICY, multiplier: 1, maxAge: null } });
    for (let i = 0; i < 25; i++) {
      attempt(http503);
      turn();
    }
    const log = d.status().attemptLog;
    expect(log).toHaveLength(20);
    expect(log.map((a) => a.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => i + 6));
  });
});

describe('the controls', () => {
  test('each control is refused with the type the client reports, unless the delivery is in a state for it', () => {
    const { d, attempt } = tracked();
    expect(refusal(() => d.checkRetryNow())).toEqual({ type: 'NotWaiting', message: 'the delivery is not waiting (it is pending)' });
    expect(refusal(() => d.checkResume())).toEqual({ type: 'NotPaused', message: 'the delivery is not paused' });
    attempt(http503);
    expect(() => d.checkRetryNow()).not.toThrow();
    expect(() => d.checkPause()).not.toThrow();
    d.pause('');
    expect(refusal(() => d.checkPause())).toEqual({ type: 'AlreadyPaused', message: 'the delivery is already paused' });
    expect(refusal(() => d.checkRetryNow())).toEqual({ type: 'NotWaiting', message: 'the delivery is paused: resume it first' });
    expect(() => d.checkResume()).not.toThrow();
  });

  test('a pause shows in the status and the list, hides the planned time, and resume brings it back', () => {
    const { d, clock, upserts, attempt } = tracked();
    attempt(http503);
    clock.t += 300;
    d.pause('maintenance window');
    expect(upserts.at(-1)).toEqual({ DeliveryState: 'paused' });
    expect(d.status()).toMatchObject({
      state: 'paused',
      nextAttemptAt: null,
      summary: 'paused: maintenance window',
      pause: { reason: 'maintenance window', since: iso(T0 + 310) },
    });
    expect(d.waitsForResume()).toBe(true);
    expect(d.status().summary).toBe('paused: maintenance window — attempt 2 waits for resume');
    const resumed = d.resume();
    expect(resumed).toMatchObject({ pause: null, nextAttemptAt: iso(T0 + 10 + 1_000) });
    expect(d.waitsForResume()).toBe(false);
  });

  test('an operator without a reason pauses "by an operator"; an attempt in flight is not shown as paused', () => {
    const { d, upserts } = tracked();
    d.startAttempt();
    d.pause('');
    expect(d.status()).toMatchObject({ state: 'attempting', pause: { reason: 'paused by an operator' } });
    expect(upserts).toEqual([]);
  });

  test('retry now ends the wait for the planned time; asked while paused, it is void once resumed', () => {
    const { d, attempt } = tracked();
    attempt(http503);
    expect(d.waitBeforeTurn()).toMatchObject({ ms: 1_000 });
    d.retryNow();
    expect(d.retryRequested).toBe(true);
    expect(d.waitBeforeTurn()).toBeNull();
    d.turnTaken();
    expect(d.retryRequested).toBe(false);

    const paused = tracked();
    paused.attempt(http503);
    paused.d.pause('x');
    paused.d.retryNow();
    paused.d.resume();
    paused.d.resumed();
    expect(paused.d.waitBeforeTurn()).toMatchObject({ ms: 1_000 });
  });

  test('paused time does not age the delivery; a pause past the deadline expires it when resumed', () => {
    const { d, clock, attempt } = tracked();
    attempt(http503);
    d.pause('x');
    clock.t += 600_000;
    d.resume();
    expect(d.retryInput(false).agedFrom).toBe(T0 + 600_000);
    expect(d.carried().pausedMs).toBe(600_000);
    expect(d.expiredWhilePaused()).toBeNull();

    const deadline = T0 + 60_000;
    const late = tracked({ policy: { ...POLICY, deadline } });
    late.attempt(http503);
    late.d.pause('x');
    late.clock.t = deadline + 1;
    late.d.resume();
    expect(late.d.expiredWhilePaused()).toMatchObject({ outcome: 'expired', reason: `the deadline ${iso(deadline)} passed while paused` });
  });

  test('a deadline that passed before the first attempt, never paused, says so (not "while paused")', () => {
    const deadline = T0 + 5_000;
    const late = tracked({ policy: { ...POLICY, deadline } });
    late.clock.t = deadline + 1;
    expect(late.d.expiredWhilePaused()).toMatchObject({
      outcome: 'expired',
      attempts: 0,
      reason: `the deadline ${iso(deadline)} passed before attempt 1 could be sent`,
    });
  });

  test('a cancelled delivery says so in the list with its attempts', () => {
    const { d, upserts, attempt } = tracked();
    attempt(http503);
    d.cancelled();
    expect(upserts.at(-1)).toEqual({ DeliveryState: 'cancelled', Attempts: 1 });
    expect(d.status()).toMatchObject({ state: 'cancelled', nextAttemptAt: null, summary: 'cancelled' });
  });
});

describe('continue-as-new', () => {
  test('the next run starts with everything this one learnt, and does not announce a class the list has', () => {
    const { d, clock, attempt } = tracked();
    attempt(http503);
    const carried = d.carried();
    expect(carried).toMatchObject({
      run: 2,
      attempts: 1,
      firstAttemptAt: T0,
      nextAttemptAt: T0 + 10 + 1_000,
      previousDelay: 1_000,
      pausedMs: 0,
      pause: null,
    });

    const next = tracked({}, carried);
    next.clock.t = clock.t;
    expect(next.d.status()).toMatchObject({
      state: 'waiting',
      attempts: 1,
      attemptLog: d.status().attemptLog,
      lastError: d.status().lastError,
    });
    next.turn();
    next.attempt(http503);
    expect(next.upserts).toEqual([{ DeliveryState: 'waiting', Attempts: 2 }]);
    expect(next.d.carried().run).toBe(3);
  });

  test('a paused delivery continues paused', () => {
    const { d, attempt } = tracked();
    attempt(http503);
    d.pause('x');
    const next = tracked({}, d.carried());
    expect(next.d.status()).toMatchObject({ state: 'paused', pause: { reason: 'x' }, nextAttemptAt: null });
    expect(next.d.waitsForResume()).toBe(true);
  });
});

describe('retries on the server', () => {
  const progress = (over: Partial<RetryProgress>): RetryProgress => ({
    attempts: 3,
    previousDelay: 4_000,
    lastError: { class: 'server', code: 'http-502', reason: 'HTTP 502', attempt: 3, at: iso(T0 + 7_000) },
    lastAttemptAt: T0 + 7_000,
    attemptLog: [],
    nextAttemptAt: T0 + 15_000,
    hinted: false,
    reservedAt: null,
    heldBack: 0,
    ...over,
  });

  test("the retrying activity's input is the delivery as it stands; a retry-now plans it for now, past the budget", () => {
    const { d, clock, attempt } = tracked();
    attempt(http503);
    const input = d.retryInput(false);
    expect(input).toMatchObject({
      progress: { attempts: 1, previousDelay: 1_000, nextAttemptAt: T0 + 10 + 1_000, hinted: false, lastError: { code: 'http-503' } },
      agedFrom: T0,
      searchedClass: 'server',
      skipBudget: false,
    });
    expect(d.status().summary).toMatch(/later attempts are retried by Temporal \(Pending Activities shows the next\)$/);
    expect(d.takeRetryRequest()).toBe(false);
    d.retryNow();
    clock.t += 100;
    expect(d.takeRetryRequest()).toBe(true);
    expect(d.retryInput(true)).toMatchObject({ progress: { nextAttemptAt: T0 + 110 }, skipBudget: true });
  });

  test('progress read at a stop is taken unless it is behind; a class change goes to the list; the end finishes', () => {
    const { d, upserts, attempt } = tracked();
    attempt(http503);
    d.adoptStopped(progress({ attempts: 0 }));
    expect(d.status().attempts).toBe(1);
    d.adoptStopped(null);
    d.adoptStopped(progress({}));
    expect(d.status()).toMatchObject({ attempts: 3, nextAttemptAt: iso(T0 + 15_000), lastError: { code: 'http-502' } });

    const timedOut = { class: 'connection', code: 'timeout', reason: 'a timeout', attempt: 4, at: iso(T0) } as const;
    d.retryEnded({ end: 'class-changed', progress: progress({ attempts: 4, lastError: timedOut }) });
    d.classChanged();
    expect(upserts.at(-1)).toEqual({ Attempts: 4, LastErrorClass: 'connection' });
    expect(d.retryInput(false).searchedClass).toBe('connection');

    const end = { end: 'delivered', progress: progress({ attempts: 6, hinted: true }), code: 'http-200', reason: 'HTTP 200' } as const;
    d.retryEnded(end);
    expect(d.finishRetries(end)).toMatchObject({ outcome: 'delivered', attempts: 6, reason: 'HTTP 200 on attempt 6' });
    // the last error (server) is not what the list says (connection): the final update corrects it
    expect(upserts.at(-1)).toEqual({ DeliveryState: 'delivered', Attempts: 6, LastErrorClass: 'server' });
  });

  test('an exhausted retrying ends the delivery with its reason, the message kept for redrive', () => {
    const { d, delivery, attempt } = tracked();
    attempt(http503);
    const end = { end: 'exhausted', progress: progress({ attempts: 10 }), reason: '10 of 10 attempts made; last error: HTTP 502' } as const;
    d.retryEnded(end);
    expect(d.finishRetries(end)).toMatchObject({ outcome: 'exhausted', attempts: 10, reason: end.reason, message: delivery });
  });
});
