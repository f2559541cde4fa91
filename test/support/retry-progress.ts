import type { ErrorClass } from '../../src/classify/types';
import type { RetryProgress } from '../../src/contract';

/** A retrying activity's progress after `attempts` failed attempts, the last of `lastClass` with `code`, its next attempt due now. */
export function retryProgress(
  { attempts = 1, lastClass = 'server', code = 'http-503' }: { attempts?: number; lastClass?: ErrorClass; code?: string } = {},
  over: Partial<RetryProgress> = {},
): RetryProgress {
  return {
    attempts,
    previousDelay: 200,
    lastError: { class: lastClass, code, reason: 'r', attempt: attempts, at: new Date(0).toISOString() },
    lastAttemptAt: Date.now() - 1_000,
    attemptLog: [],
    nextAttemptAt: Date.now() - 10,
    hinted: false,
    reservedAt: null,
    heldBack: 0,
    ...over,
  };
}
