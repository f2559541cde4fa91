import type { Classification } from '../classify/types';
import type { AttemptError } from './types';

/**
 * A failed attempt as `lastError` keeps it, for a delivery (its first attempt in the workflow, its retries in
 * the retrying activity) and for a command subscription. A failure is never classed `success` (an override
 * that turns a code into success makes the attempt a delivered one), so its class is an error class.
 */
export function attemptError(failure: Pick<Classification, 'class' | 'code' | 'reason'>, attempt: number, at: number): AttemptError {
  const { code, reason } = failure;
  return { class: failure.class as AttemptError['class'], code, reason, attempt, at: new Date(at).toISOString() };
}
