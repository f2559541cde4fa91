import { nextDelay } from './backoff';
import type { BackoffPolicy } from './types';

export interface TimelineOptions {
  /** Attempts to follow; the timeline stops earlier when the policy expires or exhausts. Default 15. */
  attempts?: number;
  /** How long each failing attempt takes before its wait begins, in ms. Default 0. */
  attemptMs?: number;
  /** When the first attempt starts (epoch ms); matters only for a `deadline`. Default 0. */
  startAt?: number;
}

/** One possible run of a delivery whose every attempt fails. */
export interface Timeline {
  /** When each attempt starts, in ms after the first (so offsets[0] is 0). */
  offsets: number[];
  /** Why it stopped before the attempts followed, or null when it would go on. */
  ending: 'expired' | 'exhausted' | null;
}

/** The attempt times one sequence of draws gives, asking nextDelay exactly as the delivery workflow does. */
export function attemptTimeline(policy: BackoffPolicy, random: () => number, options: TimelineOptions = {}): Timeline {
  const { attempts = 15, attemptMs = 0, startAt = 0 } = options;
  const offsets = [0];
  let previousDelay: number | null = null;
  while (offsets.length < attempts) {
    const failedAt = offsets[offsets.length - 1]! + attemptMs;
    const decision = nextDelay(
      policy,
      { attempts: offsets.length, previousDelay, firstAttemptAt: startAt, now: startAt + failedAt },
      random,
    );
    if (!decision.retry) return { offsets, ending: decision.outcome };
    previousDelay = decision.delay;
    offsets.push(failedAt + decision.delay);
  }
  return { offsets, ending: null };
}

/** Where attempt `attempt` falls, over the draws that reached it; offsets in ms after the first attempt. */
export interface AttemptSpread {
  attempt: number;
  /** Draws in which this attempt happened (fewer than all when the policy expired or exhausted before it). */
  draws: number;
  minMs: number;
  medianMs: number;
  p95Ms: number;
}

export interface SchedulePreview {
  draws: number;
  attempts: AttemptSpread[];
  /** How the draws ended within the attempts followed. */
  endings: { expired: number; exhausted: number; ongoing: number };
}

/** The spread of every attempt's time over `draws` independent runs. */
export function previewSchedule(
  policy: BackoffPolicy,
  random: () => number,
  options: TimelineOptions & { draws: number },
): SchedulePreview {
  const byAttempt: number[][] = [];
  const endings = { expired: 0, exhausted: 0, ongoing: 0 };
  for (let d = 0; d < options.draws; d++) {
    const { offsets, ending } = attemptTimeline(policy, random, options);
    offsets.forEach((offset, i) => (byAttempt[i] ??= []).push(offset));
    endings[ending ?? 'ongoing']++;
  }
  const attempts = byAttempt.map((offsets, i) => {
    const sorted = Float64Array.from(offsets).sort();
    return { attempt: i + 1, draws: sorted.length, minMs: sorted[0]!, medianMs: quantile(sorted, 0.5), p95Ms: quantile(sorted, 0.95) };
  });
  return { draws: options.draws, attempts, endings };
}

/** Nearest-rank quantile of sorted values: a value that occurred, never an interpolation. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}
