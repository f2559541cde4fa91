import { formatDuration as d } from './duration';
import type { BackoffPolicy } from './types';

const JITTER_WORDS = {
  full: 'full jitter (a random wait up to the window)',
  equal: 'equal jitter (half the window plus a random part of the other half)',
  decorrelated: 'decorrelated jitter (a random wait between initial and 3 × the previous one)',
  none: 'no jitter (the window itself)',
} as const;

/** A policy in one sentence, for previews and plots. */
export function describePolicy(policy: BackoffPolicy): string {
  if (policy.maxAttempts === 1) return 'one attempt, no retries';
  const growth =
    policy.jitter === 'decorrelated'
      ? `from ${d(policy.initial)} up to ${d(policy.max)}`
      : `window ${d(policy.initial)} ×${policy.multiplier} per attempt up to ${d(policy.max)}`;
  const floor = policy.min > 0 ? `, at least ${d(policy.min)} apart` : '';
  const attempts = policy.maxAttempts === 0 ? 'unlimited attempts' : `at most ${policy.maxAttempts} attempts`;
  const bounds = [
    policy.maxAge !== null && `expires ${d(policy.maxAge)} after the first attempt`,
    policy.deadline !== null && `expires at ${new Date(policy.deadline).toISOString()}`,
  ].filter(Boolean);
  return `${JITTER_WORDS[policy.jitter]}, ${growth}${floor}; ${attempts}; ${bounds.length ? bounds.join(' or ') : 'no time bound'}`;
}
