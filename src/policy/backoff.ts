import type { BackoffPolicy, RetryDecision, RetryState } from './types';

/** The wait before the next attempt, or why there is none. `random` returns [0, 1). */
export function nextDelay(
  policy: BackoffPolicy,
  state: RetryState,
  random: () => number,
  hintMs?: number,
): RetryDecision {
  if (policy.maxAttempts > 0 && state.attempts >= policy.maxAttempts) {
    return { retry: false, outcome: 'exhausted', reason: `${state.attempts} of ${policy.maxAttempts} attempts made` };
  }
  const retry = state.attempts - 1;
  const window = Math.min(policy.max, policy.initial * Math.pow(policy.multiplier, retry));
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
      const previous = state.previousDelay ?? policy.initial;
      const high = Math.max(policy.initial, previous * 3);
      delay = Math.min(policy.max, policy.initial + random() * (high - policy.initial));
      break;
    }
  }
  delay = Math.round(Math.max(policy.min, delay));
  let hinted = false;
  if (hintMs !== undefined && hintMs > delay) {
    delay = Math.round(hintMs + random() * Math.min(hintMs * 0.1, 30_000));
    hinted = true;
  }
  const at = state.now + delay;
  if (policy.maxAge !== null && at > state.firstAttemptAt + policy.maxAge) {
    return { retry: false, outcome: 'expired', reason: 'the next attempt would fall after the max age' };
  }
  if (policy.deadline !== null && at > policy.deadline) {
    return { retry: false, outcome: 'expired', reason: 'the next attempt would fall after the deadline' };
  }
  return { retry: true, delay, hinted };
}
