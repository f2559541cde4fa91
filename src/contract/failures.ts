import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import { FAILURE_TYPES, UNSENT_TYPE } from '../classify/classify';
import type { Classification } from '../classify/types';
import type { AttemptFailureDetails, RetryProgress, UnsentDetails } from './attempts';
import type { HoldFailureDetails } from './subscription';

/*
 * What a failed activity tells its workflow, in the ApplicationFailure's `type` and `details`: written by the
 * activities and read by the workflows here only. The details are an array on the wire, and recorded histories
 * keep the arrays as they were written (a retrying activity's progress second, after its failure or a null);
 * a reader finds each detail by its shape, never by its position.
 */

/** Margin over the transport's own timeout before Temporal gives up on an attempt (a worker lost mid-attempt). */
export const ATTEMPT_MARGIN_MS = 5_000;

/** Failure type of an attempt of an activity that only waits: for its planned time, or for room at the endpoint. */
export const WAITING_TYPE = 'DeliveryWaiting';

/** The class an ApplicationFailure type stands for (FAILURE_TYPES the other way round). */
export const CLASS_OF_TYPE = new Map(Object.entries(FAILURE_TYPES).map(([cls, type]) => [type, cls]));

// The shapes of the details

const isObject = (d: unknown): d is Record<string, unknown> => typeof d === 'object' && d !== null;

/** A classification (an attempt's or a hold's failure): every one has a class and a code. */
function isAttemptFailure(d: unknown): d is AttemptFailureDetails {
  return isObject(d) && typeof d.class === 'string' && typeof d.code === 'string';
}

/** A retrying activity's progress: its attempt count and attempt log. */
function isRetryProgress(d: unknown): d is RetryProgress {
  return isObject(d) && typeof d.attempts === 'number' && Array.isArray(d.attemptLog);
}

function isUnsent(d: unknown): d is UnsentDetails {
  return isObject(d) && typeof d.outcome === 'string' && typeof d.reason === 'string' && !('class' in d);
}

/** The ApplicationFailure an activity's failure is, or carries as its cause (a workflow sees an ActivityFailure). */
function applicationFailureOf(err: unknown): ApplicationFailure | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? cause : null;
}

function detailOf<T>(failure: ApplicationFailure | null, is: (d: unknown) => d is T): T | null {
  return failure?.details?.find(is) ?? null;
}

// Writing (activities)

/**
 * A failed attempt (or hold) as its activity ends: one type per class (FAILURE_TYPES), not retried by the server
 * when the class says a retry cannot succeed. `progress`: the retrying activity's, for a workflow that stops it.
 */
export function attemptFailure(
  failure: AttemptFailureDetails,
  options: { nextRetryDelay?: number; progress?: RetryProgress } = {},
): ApplicationFailure {
  const { ok: _ok, ...details } = failure as AttemptFailureDetails & { ok?: boolean };
  return ApplicationFailure.create({
    type: typeOfClass(failure),
    message: failure.reason,
    nonRetryable: !failure.retryable,
    details: options.progress === undefined ? [details] : [details, options.progress],
    ...(options.nextRetryDelay !== undefined && { nextRetryDelay: options.nextRetryDelay }),
  });
}

/** A "success" verdict that still fails (a callback's answer that cannot be used) counts as the server's. */
function typeOfClass(c: Pick<Classification, 'class'>): string {
  return c.class === 'success' ? FAILURE_TYPES.server : FAILURE_TYPES[c.class];
}

/** An attempt of an activity that only waits, on the server, until `delayMs` have passed; `progress` as above. */
export function waitingFailure(delayMs: number, message: string, progress?: RetryProgress): ApplicationFailure {
  return ApplicationFailure.create({
    type: WAITING_TYPE,
    message,
    nextRetryDelay: Math.max(1, Math.round(delayMs)),
    // the progress goes second, as in attemptFailure's details, which recorded histories keep
    details: progress === undefined ? [] : [null, progress],
  });
}

/** The first attempt's failure that ends the delivery without sending it (docs/retries.md, endpoint limits). */
export function unsentFailure(details: UnsentDetails): ApplicationFailure {
  return ApplicationFailure.create({ type: UNSENT_TYPE, message: details.reason, nonRetryable: true, details: [details] });
}

// Reading (workflows, and the retrying activity reading a handed-back attempt)

/** The details of an attempt's failure of one of the classes' types (`types`: only these), or null. */
export function attemptFailureDetails(err: unknown, types?: readonly string[]): AttemptFailureDetails | null {
  const failure = applicationFailureOf(err);
  if (!failure?.type || !CLASS_OF_TYPE.has(failure.type) || (types && !types.includes(failure.type))) return null;
  return detailOf(failure, isAttemptFailure);
}

/** The classification of a failed attempt's activity (a delivery's, a subscription callback's), whatever way it failed. */
export function failureOf(err: unknown, timeoutMs: number): AttemptFailureDetails {
  const details = attemptFailureDetails(err);
  if (details) return details;
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) {
    // the worker running the attempt was lost, or the transport hung past its own timeout
    return {
      class: 'connection',
      retryable: true,
      code: 'timeout',
      reason: `the attempt did not finish within ${timeoutMs + ATTEMPT_MARGIN_MS} ms`,
      durationMs: timeoutMs + ATTEMPT_MARGIN_MS,
    };
  }
  // an unexpected error inside the activity: retry with backoff rather than lose the message
  const message = cause instanceof Error ? cause.message : String(cause);
  return {
    class: 'server',
    retryable: true,
    code: 'internal-error',
    reason: `the attempt failed inside the worker: ${message}`,
    durationMs: 0,
  };
}

/** A failed hold's details as its activity wrote them; when the subscription was lost may be missing. */
export function holdFailureDetails(err: unknown): (AttemptFailureDetails & Partial<HoldFailureDetails>) | null {
  return attemptFailureDetails(err);
}

/** The outcome a first attempt ended its delivery with, unsent (UNSENT_TYPE); null for any other failure. */
export function unsentOf(err: unknown): UnsentDetails | null {
  const failure = applicationFailureOf(err);
  return failure?.type === UNSENT_TYPE ? detailOf(failure, isUnsent) : null;
}

/** The retrying activity's progress carried by its failure (an attempt in flight when it was stopped). */
export function progressOf(err: unknown): RetryProgress | null {
  return detailOf(applicationFailureOf(err), isRetryProgress);
}
