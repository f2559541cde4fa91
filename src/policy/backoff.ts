import { formatDuration } from './duration';
import type { BackoffPolicy, RetryDecision, RetryState } from './types';

/**
 * A hinted wait is stretched by up to this share of the hint (at most HINT_SPREAD_CAP_MS), so that
 * deliveries parked on the same Retry-After do not all wake in the same instant. Never shortened: the
 * server asked for at least that long.
 */
export const HINT_SPREAD = 0.1;
export const HINT_SPREAD_CAP_MS = 30_000;

/** `decorrelated` draws the next wait from [initial, previous * 3] (Brooker, 2015). */
const DECORRELATED_GROWTH = 3;

/** The backoff window for the wait after attempt `attempts`: min(max, initial * multiplier^(attempts - 1)). */
export function backoffWindow(policy: Pick<BackoffPolicy, 'initial' | 'multiplier' | 'max'>, attempts: number): number {
  // multiplier^n overflows to Infinity for large n, which min() turns into max
  return Math.min(policy.max, policy.initial * Math.pow(policy.multiplier, attempts - 1));
}

/** The policy's own wait after attempt `state.attempts` (jitter, then the floor), in whole ms; no hints, no bounds. */
export function backoffDelay(policy: BackoffPolicy, state: Pick<RetryState, 'attempts' | 'previousDelay'>, random: () => number): number {
  const window = backoffWindow(policy, state.attempts);
  let delay: number;
  switch (policy.jitter) {
    case 'none':
      delay = window;
      break;
    case 'full':
      delay = random() * window;
      break;
    case 'equal':
      delay = window / 2 + random() * (window / 2);
      break;
    case 'decorrelated': {
      const high = Math.max(policy.initial, (state.previousDelay ?? policy.initial) * DECORRELATED_GROWTH);
      delay = Math.min(policy.max, policy.initial + random() * (high - policy.initial));
      break;
    }
  }
  return Math.round(Math.max(policy.min, delay));
}

/**
 * The wait before the next attempt, or why there is none. A pure function of its arguments, so a
 * workflow that passes its deterministic `random` (in [0, 1)) replays the same waits.
 *
 * `hintMs` (a server's Retry-After or quota reset, in ms from now) replaces the computed wait when
 * longer, stretched by a small jitter. A wait that would land after `maxAge` or `deadline` becomes
 * `expired` now rather than a sleep in vain.
 */
export function nextDelay(policy: BackoffPolicy, state: RetryState, random: () => number, hintMs?: number): RetryDecision {
  if (!Number.isInteger(state.attempts) || state.attempts < 1) {
    throw new RangeError(`nextDelay: attempts must be a whole number ≥ 1 (attempts made so far), got ${state.attempts}`);
  }
  if (policy.maxAttempts > 0 && state.attempts >= policy.maxAttempts) {
    return { retry: false, outcome: 'exhausted', reason: `${state.attempts} of ${policy.maxAttempts} attempts made` };
  }
  let delay = backoffDelay(policy, state, random);
  let hinted = false;
  // a hint that is not a finite positive number says nothing usable
  if (hintMs !== undefined && Number.isFinite(hintMs) && hintMs > delay) {
    delay = Math.ceil(hintMs + random() * Math.min(hintMs * HINT_SPREAD, HINT_SPREAD_CAP_MS));
    hinted = true;
  }
  const at = state.now + delay;
  const wait = `the next attempt, ${formatDuration(delay)} from now,`;
  if (policy.maxAge !== null && at > state.firstAttemptAt + policy.maxAge) {
    return { retry: false, outcome: 'expired', reason: `${wait} would fall after the max age of ${formatDuration(policy.maxAge)}` };
  }
  if (policy.deadline !== null && at > policy.deadline) {
    return { retry: false, outcome: 'expired', reason: `${wait} would fall after the deadline ${new Date(policy.deadline).toISOString()}` };
  }
  return { retry: true, delay, hinted };
}
