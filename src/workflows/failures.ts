import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import type { AttemptFailureDetails } from '../activities';
import { FAILURE_TYPES } from '../classify/classify';

/** Margin over the transport's own timeout before Temporal gives up on an attempt (a worker lost mid-attempt). */
export const ATTEMPT_MARGIN_MS = 5_000;

/** The class an ApplicationFailure type stands for (FAILURE_TYPES the other way round). */
export const CLASS_OF_TYPE = new Map(Object.entries(FAILURE_TYPES).map(([cls, type]) => [type, cls]));

/** The classification of a failed attempt's activity (a delivery's, a subscription callback's), whatever way it failed. */
export function failureOf(err: unknown, timeoutMs: number): AttemptFailureDetails {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type && CLASS_OF_TYPE.has(cause.type)) {
    const details = cause.details?.[0] as AttemptFailureDetails | undefined;
    if (details) return details;
  }
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
