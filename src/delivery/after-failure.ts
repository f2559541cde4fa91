import type { Classification, Verdict } from '../classify/types';
import { nextDelay } from '../policy/backoff';
import { mqttQos } from './summary';
import type { AttemptRecord, Delivery, Outcome } from './types';

/** How many attempts a delivery's log keeps (the latest): the status shows them, continue-as-new carries them. */
export const ATTEMPT_LOG_SIZE = 20;

/** One attempt as the log records it: `startedAt` in epoch ms, its duration rounded to whole ms. */
export interface LoggedAttempt {
  attempt: number;
  startedAt: number;
  durationMs: number;
  code: string;
  ok: boolean;
  /** The classifier's verdict, its sentence (the endpoint's answer in words), the server's hint: when known. */
  class?: Verdict;
  reason?: string;
  retryAfterMs?: number;
}

/** The longest answer the log keeps of one attempt (the classifier's sentence quotes at most 200 characters of the server's). */
export const ATTEMPT_ANSWER_LENGTH = 400;

/** One attempt as the log keeps it: times in ISO, the answer cut to ATTEMPT_ANSWER_LENGTH. */
export function attemptRecord(entry: LoggedAttempt): AttemptRecord {
  const { attempt, code, ok } = entry;
  return {
    attempt,
    startedAt: new Date(entry.startedAt).toISOString(),
    durationMs: Math.round(entry.durationMs),
    code,
    ok,
    ...(entry.class !== undefined && { class: entry.class }),
    ...(entry.reason !== undefined && { answer: entry.reason.slice(0, ATTEMPT_ANSWER_LENGTH) }),
    ...(entry.retryAfterMs !== undefined && { retryAfterMs: entry.retryAfterMs }),
  };
}

/** The attempt log with `entry` appended, keeping the latest ATTEMPT_LOG_SIZE. */
export function logAttempt(log: readonly AttemptRecord[], entry: LoggedAttempt): AttemptRecord[] {
  return [...log, attemptRecord(entry)].slice(-ATTEMPT_LOG_SIZE);
}

/** What the log keeps of an attempt's verdict: the classifier's class (a success's: `success`), its sentence, the server's hint. */
export function verdictOf(result: {
  reason: string;
  class?: Verdict;
  retryAfterMs?: number;
}): Pick<LoggedAttempt, 'class' | 'reason' | 'retryAfterMs'> {
  return {
    class: result.class ?? 'success',
    reason: result.reason,
    ...(result.retryAfterMs !== undefined && { retryAfterMs: result.retryAfterMs }),
  };
}

/** Telemetry at QoS 0 is sent once or not at all (MQTT's "at most once"): never retried, never held for later. */
export function sentOnce(delivery: Pick<Delivery, 'kind' | 'qos'>): boolean {
  return mqttQos(delivery) === 0;
}

/** What follows a failed attempt: the delivery ends with an outcome, or its next attempt comes after `delay` ms. */
export type AfterFailure =
  | { end: Extract<Outcome, 'dropped' | 'rejected' | 'expired' | 'exhausted'>; reason: string }
  | { end: null; delay: number; hinted: boolean };

/**
 * The rule after a failed attempt, for the workflow's own attempts and the retrying activity's alike
 * (docs/retries.md): telemetry QoS 0 is dropped, a `client` error rejected (an unchanged retry cannot
 * succeed: docs/error-classification.md), and anything else waits as the delivery's policy says (its
 * backoff, a server's Retry-After), unless its attempts are spent (exhausted) or the next would fall past
 * its max age or deadline (expired).
 *
 * Rejection is decided on the class, not on `retryable`: the classification makes a failure retryable
 * exactly when its class is not `client`, and the workflow has always decided on the class (its recorded
 * histories replay by it). Draws from `random` only when it waits or gives up on the policy, as before.
 */
export function afterFailure(
  delivery: Pick<Delivery, 'kind' | 'qos' | 'policy'>,
  failure: Pick<Classification, 'class' | 'reason' | 'retryAfterMs'>,
  /** `attempts`: made so far, the failed one included; `agedFrom`: what the max age counts from (paused time added); `at`: when it failed. */
  state: { attempts: number; previousDelay: number | null; agedFrom: number; at: number },
  random: () => number,
): AfterFailure {
  if (sentOnce(delivery)) return { end: 'dropped', reason: `telemetry QoS 0 is sent once; it failed: ${failure.reason}` };
  if (failure.class === 'client') return { end: 'rejected', reason: failure.reason };
  const { attempts, previousDelay, agedFrom, at } = state;
  const decision = nextDelay(delivery.policy, { attempts, previousDelay, firstAttemptAt: agedFrom, now: at }, random, failure.retryAfterMs);
  if (!decision.retry) return { end: decision.outcome, reason: `${decision.reason}; last error: ${failure.reason}` };
  return { end: null, delay: decision.delay, hinted: decision.hinted };
}
