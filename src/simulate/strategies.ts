import { backoffDelay } from '../policy/backoff';
import type { BackoffPolicy, Jitter } from '../policy/types';

/** The five contenders of Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015). */
export const STRATEGIES = ['no-backoff', 'exponential', 'full', 'equal', 'decorrelated'] as const;

export type Strategy = (typeof STRATEGIES)[number];

/** The redeliver jitter each backed-off strategy runs on: the experiment exercises the real engine. */
const JITTER_OF: Record<Exclude<Strategy, 'no-backoff'>, Jitter> = {
  exponential: 'none',
  equal: 'equal',
  decorrelated: 'decorrelated',
  full: 'full',
};

/** The wait before a client's next try, after `failures` failed writes (≥ 1). */
export type Backoff = (failures: number, previousDelay: number | null, random: () => number) => number;

/**
 * `base` and `cap` as in the article: the window after n failures is min(cap, base * 2^n). `min` is a
 * policy's floor after jitter, which the article does not have (default 0).
 */
export function backoffOf(strategy: Strategy, base: number, cap: number, min = 0): Backoff {
  if (strategy === 'no-backoff') return () => 0;
  // the article's clients double before the first wait, which redeliver's engine (window
  // initial * 2^(attempts - 1)) reproduces with attempts = failures + 1
  const policy: BackoffPolicy = {
    jitter: JITTER_OF[strategy],
    initial: base,
    multiplier: 2,
    min,
    max: cap,
    maxAttempts: 0,
    maxAge: null,
    deadline: null,
  };
  return (failures, previousDelay, random) => backoffDelay(policy, { attempts: failures + 1, previousDelay }, random);
}
