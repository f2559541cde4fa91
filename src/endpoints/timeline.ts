/**
 * Attempts at one endpoint per second, for plotting. Sparse (only seconds with attempts) and capped, so it
 * stays small enough to travel through continue-as-new as plain data. Pure and deterministic.
 *
 * Kept simple on purpose: `ok` counts the attempts that got through and `failed` every other one, client
 * errors included; whether sending was possible is the downtime ledger's question, not this one's.
 */
import type { AttemptOutcome, TimelineBucket } from './types';

export type { TimelineBucket };

/** The seconds a timeline keeps by default, most recent last: an hour of busy seconds. */
export const KEPT_SECONDS = 3_600;

/** Buckets in ascending `second`, each second at most once. */
export type Timeline = TimelineBucket[];

/**
 * `timeline` with `outcomes` counted in (in any order; a second already there is added to), keeping the
 * `cap` most recent seconds. Returns a new timeline.
 */
export function addToTimeline(timeline: readonly TimelineBucket[], outcomes: readonly AttemptOutcome[], cap = KEPT_SECONDS): Timeline {
  if (!Number.isInteger(cap) || cap < 0) throw new RangeError(`cap must be a whole number ≥ 0, got ${String(cap)}`);
  const merged = mergeBuckets(timeline, bucketsOf(outcomes));
  return merged.length > cap ? merged.slice(merged.length - cap) : merged;
}

/** The outcomes' own buckets, sorted. Outcomes without a usable time are left out. */
function bucketsOf(outcomes: readonly AttemptOutcome[]): TimelineBucket[] {
  const bySecond = new Map<number, TimelineBucket>();
  for (const o of outcomes) {
    if (!Number.isFinite(o.at)) continue;
    const second = Math.floor(o.at / 1000);
    const bucket = bySecond.get(second) ?? { second, ok: 0, failed: 0 };
    const n = o.count ?? 1;
    bySecond.set(second, o.ok ? { ...bucket, ok: bucket.ok + n } : { ...bucket, failed: bucket.failed + n });
  }
  return [...bySecond.values()].sort((a, b) => a.second - b.second);
}

/** Two sorted timelines as one, the counts of a second in both added up. */
function mergeBuckets(a: readonly TimelineBucket[], b: readonly TimelineBucket[]): TimelineBucket[] {
  return mergeBySecond(a, b, (x, y) => ({ second: x.second, ok: x.ok + y.ok, failed: x.failed + y.failed }));
}

/** Two lists sorted by `second` as one, sorted; `add` makes one entry of two for the same second. */
export function mergeBySecond<T extends { second: number }>(a: readonly T[], b: readonly T[], add: (x: T, y: T) => T): T[] {
  const merged: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    if (x && (!y || x.second < y.second)) {
      merged.push(x);
      i++;
    } else if (y && (!x || y.second < x.second)) {
      merged.push(y);
      j++;
    } else if (x && y) {
      merged.push(add(x, y));
      i++;
      j++;
    }
  }
  return merged;
}
