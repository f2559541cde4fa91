import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities, AttemptFailureDetails } from '../activities';
import type { ErrorClass } from '../classify/types';
import { FAILURE_TYPES } from '../classify/classify';
import { expiresAt, waitingSummary } from '../delivery/summary';
import type {
  AttemptError,
  AttemptRecord,
  Delivery,
  DeliveryResult,
  DeliveryStateName,
  DeliveryStatus,
  Outcome,
} from '../delivery/types';
import { nextDelay } from '../policy/backoff';
import { Attempts, DeliveryState, LastErrorClass, statusQuery } from './definitions';

export interface DeliveryWorkflowInput {
  delivery: Delivery;
}

/** Margin over the transport's own timeout before Temporal gives up on an attempt (a worker lost mid-attempt). */
const ATTEMPT_MARGIN_MS = 5_000;
const ATTEMPT_LOG_SIZE = 20;

/**
 * One delivery: attempts are activities, waits between them durable timers drawn from the policy with
 * the workflow's deterministic randomness, until an outcome of SPEC §5.
 */
export async function deliveryWorkflow({ delivery }: DeliveryWorkflowInput): Promise<DeliveryResult> {
  const { sendAttempt } = proxyActivities<Activities>({
    startToCloseTimeout: delivery.target.timeout + ATTEMPT_MARGIN_MS,
    // the workflow does the retrying: with jitter, hints, bounds and visibility
    retry: { maximumAttempts: 1 },
  });

  let state: DeliveryStateName = 'pending';
  let summary = 'starting';
  let attempts = 0;
  let firstAttemptAt: number | null = null;
  let lastAttemptAt: number | null = null;
  let nextAttemptAt: number | null = null;
  let previousDelay: number | null = null;
  let lastError: AttemptError | null = null;
  const attemptLog: AttemptRecord[] = [];

  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  setHandler(statusQuery, (): DeliveryStatus => ({
    deliveryId: delivery.deliveryId,
    messageId: delivery.messageId,
    kind: delivery.kind,
    qos: delivery.qos,
    tenant: delivery.tenant,
    device: delivery.device,
    endpoint: delivery.endpoint,
    state,
    attempts,
    firstAttemptAt: iso(firstAttemptAt),
    lastAttemptAt: iso(lastAttemptAt),
    nextAttemptAt: iso(nextAttemptAt),
    lastError,
    attemptLog: [...attemptLog],
    summary,
  }));

  const describe = (words: string) => {
    summary = words;
    setCurrentDetails(words);
  };
  const record = (entry: AttemptRecord) => {
    attemptLog.push(entry);
    if (attemptLog.length > ATTEMPT_LOG_SIZE) attemptLog.shift();
  };
  const finish = (outcome: Outcome, reason: string): DeliveryResult => {
    state = outcome;
    nextAttemptAt = null;
    describe(`${outcome}: ${reason}`);
    upsertSearchAttributes([
      { key: DeliveryState, value: outcome },
      { key: Attempts, value: attempts },
    ]);
    const deadLetter = outcome !== 'delivered';
    return {
      deliveryId: delivery.deliveryId,
      messageId: delivery.messageId,
      outcome,
      attempts,
      firstAttemptAt: iso(firstAttemptAt),
      lastAttemptAt: iso(lastAttemptAt),
      lastError,
      reason,
      ...(deadLetter && {
        message: {
          kind: delivery.kind,
          qos: delivery.qos,
          tenant: delivery.tenant,
          device: delivery.device,
          endpoint: delivery.endpoint,
          body: delivery.body,
          contentType: delivery.contentType,
        },
      }),
    };
  };

  try {
    for (;;) {
      attempts++;
      const startedAt = Date.now();
      firstAttemptAt ??= startedAt;
      state = 'attempting';
      describe(`attempt ${attempts} in progress`);
      let failure: AttemptFailureDetails;
      try {
        const ok = await sendAttempt(delivery, attempts);
        lastAttemptAt = Date.now();
        record({ attempt: attempts, startedAt: new Date(startedAt).toISOString(), durationMs: Math.round(ok.durationMs), code: ok.code, ok: true });
        return finish('delivered', `${ok.reason} on attempt ${attempts}`);
      } catch (err) {
        if (isCancellation(err)) throw err;
        failure = failureOf(err, delivery.target.timeout);
      }
      lastAttemptAt = Date.now();
      record({ attempt: attempts, startedAt: new Date(startedAt).toISOString(), durationMs: Math.round(failure.durationMs), code: failure.code, ok: false });
      lastError = { class: failure.class as ErrorClass, code: failure.code, reason: failure.reason, attempt: attempts, at: new Date(lastAttemptAt).toISOString() };

      if (delivery.kind === 'telemetry' && delivery.qos === 0) {
        return finish('dropped', `telemetry QoS 0 is sent once; it failed: ${failure.reason}`);
      }
      if (failure.class === 'client') return finish('rejected', failure.reason);

      const now = Date.now();
      const decision = nextDelay(delivery.policy, { attempts, previousDelay, firstAttemptAt, now }, Math.random, failure.retryAfterMs);
      if (!decision.retry) return finish(decision.outcome, `${decision.reason}; last error: ${failure.reason}`);

      previousDelay = decision.delay;
      nextAttemptAt = now + decision.delay;
      state = 'waiting';
      const expiry = expiresAt(delivery, firstAttemptAt);
      const words = waitingSummary({
        delayMs: decision.delay,
        code: failure.code,
        nextAttempt: attempts + 1,
        expiresInMs: expiry === null ? null : expiry - now,
        hinted: decision.hinted,
      });
      describe(words);
      upsertSearchAttributes([
        { key: DeliveryState, value: 'waiting' },
        { key: Attempts, value: attempts },
        { key: LastErrorClass, value: failure.class },
      ]);
      await sleep(decision.delay, { summary: words });
      nextAttemptAt = null;
    }
  } catch (err) {
    if (isCancellation(err)) {
      state = 'cancelled';
      nextAttemptAt = null;
      describe('cancelled');
      upsertSearchAttributes([
        { key: DeliveryState, value: 'cancelled' },
        { key: Attempts, value: attempts },
      ]);
    }
    throw err;
  }
}

const CLASS_OF_TYPE = new Map(Object.entries(FAILURE_TYPES).map(([cls, type]) => [type, cls]));

/** The classification of a failed attempt, whatever way it failed. */
function failureOf(err: unknown, timeoutMs: number): AttemptFailureDetails {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type && CLASS_OF_TYPE.has(cause.type)) {
    const details = cause.details?.[0] as AttemptFailureDetails | undefined;
    if (details) return details;
  }
  if (cause instanceof TimeoutFailure) {
    // the worker running the attempt was lost, or the transport hung past its own timeout
    return { class: 'connection', retryable: true, code: 'timeout', reason: `the attempt did not finish within ${timeoutMs + ATTEMPT_MARGIN_MS} ms`, durationMs: timeoutMs + ATTEMPT_MARGIN_MS };
  }
  // an unexpected error inside the activity: retry with backoff rather than lose the message
  const message = cause instanceof Error ? cause.message : String(cause);
  return { class: 'server', retryable: true, code: 'internal-error', reason: `the attempt failed inside the worker: ${message}`, durationMs: 0 };
}
