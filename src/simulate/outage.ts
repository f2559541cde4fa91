import { expiresAt } from '../delivery/summary';
import { InvalidInputError } from '../errors';
import { RetryBudget, type RetryBudgetOptions } from '../endpoints/budget';
import type { FailurePeriod, OutageRecording, RecordBucket } from '../endpoints/recording';
import type { ArrivalProfile } from '../endpoints/types';
import { nextDelay } from '../policy/backoff';
import { seededRandom } from '../policy/random';
import type { BackoffPolicy } from '../policy/types';
import { EventQueue } from './event-queue';
import { outageFigures, type OutageFigures, type Span } from './outage-figures';

export interface ReplayOptions {
  /** The policy each recorded profile is replayed with. Default: the recorded one. */
  policyOf?: (profile: ArrivalProfile) => BackoffPolicy;
  /** The endpoint's retry budget, for all workers together; null: none. */
  budget: RetryBudgetOptions | null;
  /** Same seed, same numbers. Default 1. */
  seed?: number;
  /** Attempts at the most; past them the replay is refused. Default MAX_REPLAYED_ATTEMPTS. */
  maxAttempts?: number;
}

export interface OutageReplay {
  figures: OutageFigures;
  /** Requests per second in the replay, for a plot (the recording's quiet hours are not replayed). */
  seconds: RecordBucket[];
  /** Deliveries replayed: the first attempts recorded in detail. */
  deliveries: number;
  delivered: number;
}

/** A delivery in the replay. */
interface Replayed {
  policy: BackoffPolicy;
  arrival: number;
  expiry: number | null;
  attempts: number;
  previousDelay: number | null;
  /** A slot the budget reserved for its next attempt. */
  reservedAt: number | null;
}

const ENDPOINT = 'replayed';

/**
 * Attempts a replay makes at the most (docs/outage-replay.md, "Bounds"): a file within its bounds can still
 * ask a policy without an age or attempt bound to retry through weeks of downtime, millions of times.
 */
export const MAX_REPLAYED_ATTEMPTS = 20_000_000;

function tooManyAttempts(max: number): InvalidInputError {
  const message =
    `make the replay pass ${max.toLocaleString('en')} attempts: the policy retries too often through the ` +
    'recorded downtime; bound it (--max-attempts, --max-age) or replay a shorter window';
  return new InvalidInputError([{ field: 'periods', message }], 'replay');
}

/**
 * A recorded outage in virtual time, under a candidate policy and retry budget: the recorded first attempts
 * arrive as they did, every attempt inside a recorded failure period fails and every other one gets through,
 * and between attempts each delivery goes the way the retrying activity takes it (retryDelivery):
 * the policy's own `nextDelay`, the same `RetryBudget`, expiry at the age bound. Attempts take no time;
 * retries go out as late as the recorded ones around the same time did (a loaded system sent them late);
 * the recording's quiet hours (first attempts that got through) count as they were.
 */
export function replayOutage(recording: OutageRecording, options: ReplayOptions): OutageReplay {
  const periods = failureSpans(recording.periods);
  const policies = recording.profiles.map((p) => options.policyOf?.(p) ?? p.policy);
  const queue = arrivalsOf(recording, periods, policies);
  const deliveries = queue.size;
  const budget = options.budget && new RetryBudget(options.budget);
  const random = seededRandom(options.seed ?? 1);
  const late = recordedLateness(recording.seconds);
  // a retry goes out as late after its planned time as the recorded ones around then did
  const retryAt = (d: Replayed, planned: number) => queue.push(planned + late(planned), d);
  const seconds = new Map<number, RecordBucket>();
  const latenessMs: number[] = [];
  // expired and exhausted are counted where they happen; a lone attempt's failure is a drop (telemetry QoS 0)
  const end = (outcome: 'expired' | 'exhausted' | 'dropped', at: number) => {
    if (outcome !== 'dropped') tally(seconds, at, outcome);
  };

  const maxAttempts = options.maxAttempts ?? MAX_REPLAYED_ATTEMPTS;
  let attempts = 0;
  for (let next = queue.pop(); next; next = queue.pop()) {
    const { at: t, event: d } = next;
    if (d.attempts > 0) {
      if (d.expiry !== null && t >= d.expiry) {
        end('expired', t);
        continue;
      }
      const grant = budget?.ask(ENDPOINT, t, 1, d.reservedAt !== null && d.reservedAt <= t, d.expiry ?? undefined);
      if (grant && !grant.now) {
        if (d.expiry !== null && grant.at >= d.expiry) end('expired', t);
        else retryAt(d, (d.reservedAt = grant.at));
        continue;
      }
      d.reservedAt = null;
    }
    d.attempts++;
    if (++attempts > maxAttempts) throw tooManyAttempts(maxAttempts);
    const failed = isDown(periods, t);
    tally(seconds, t, 'requests');
    if (d.attempts > 1) tally(seconds, t, 'retries');
    if (!failed) {
      latenessMs.push(t - d.arrival);
      continue;
    }
    tally(seconds, t, 'failed');
    const decision = nextDelay(
      d.policy,
      { attempts: d.attempts, previousDelay: d.previousDelay, firstAttemptAt: d.arrival, now: t },
      random,
    );
    if (!decision.retry) {
      end(d.policy.maxAttempts === 1 ? 'dropped' : decision.outcome, t);
      continue;
    }
    d.previousDelay = decision.delay;
    retryAt(d, t + decision.delay);
  }

  const replayed = [...seconds.values()].sort((a, b) => a.second - b.second);
  const figures = outageFigures(replayed, recording.hours, periods, quietGapOf(policies));
  return { figures: { ...figures, lateness: latenessFigures(latenessMs) }, seconds: replayed, deliveries, delivered: latenessMs.length };
}

/** The recording's own figures, by the same rules as a replay's (lateness is not recorded). */
export function recordedFigures(recording: OutageRecording): OutageFigures {
  const policies = recording.profiles.map((p) => p.policy);
  return { ...outageFigures(recording.seconds, recording.hours, failureSpans(recording.periods), quietGapOf(policies)), lateness: null };
}

export function failureSpans(periods: readonly FailurePeriod[]): Span[] {
  return periods.map((p) => ({ from: Date.parse(p.from), to: Date.parse(p.to) })).sort((a, b) => a.from - b.from);
}

/**
 * Each recorded first attempt, spread evenly over its second; in the second a failure period starts, over
 * what is left of it after the start: those arrivals are what found the endpoint down.
 */
function arrivalsOf(recording: OutageRecording, periods: Span[], policies: BackoffPolicy[]): EventQueue<Replayed> {
  const queue = new EventQueue<Replayed>();
  for (const b of recording.seconds) {
    const start = periods.find((p) => Math.floor(p.from / 1000) === b.second)?.from ?? b.second * 1000;
    const span = b.second * 1000 + 1000 - start;
    const total = (b.arrivals ?? []).reduce((sum, n) => sum + n, 0);
    let j = 0;
    for (const [profile, n] of (b.arrivals ?? []).entries()) {
      const policy = policies[profile];
      if (!policy) continue;
      for (let k = 0; k < n; k++, j++) {
        const arrival = start + ((j + 0.5) * span) / total;
        queue.push(arrival, {
          policy,
          arrival,
          expiry: expiresAt({ policy }, arrival),
          attempts: 0,
          previousDelay: null,
          reservedAt: null,
        });
      }
    }
  }
  return queue;
}

/** Recorded lateness is averaged over this many seconds either side of a retry's planned time. */
const LATENESS_WINDOW_S = 5;

/**
 * How late the recorded retries planned around a time went out: their mean over LATENESS_WINDOW_S either
 * side, else the nearest second that says within a minute, else 0. A loaded worker or server sends retries
 * late, and so then does the replay.
 */
function recordedLateness(seconds: readonly RecordBucket[]): (t: number) => number {
  const marks = seconds.filter((b) => (b.late ?? 0) > 0);
  return (t) => {
    const s = Math.floor(t / 1000);
    let [count, total, nearest] = [0, 0, { distance: Infinity, ms: 0 }];
    for (let i = firstAtOrAfter(marks, s - 60); i < marks.length && marks[i]!.second <= s + 60; i++) {
      const b = marks[i]!;
      const distance = Math.abs(b.second - s);
      if (distance <= LATENESS_WINDOW_S) [count, total] = [count + b.late!, total + b.lateMs!];
      if (distance < nearest.distance) nearest = { distance, ms: b.lateMs! / b.late! };
    }
    return count > 0 ? total / count : nearest.ms;
  };
}

/** The index of the first bucket at or after `second` (buckets sorted by second). */
function firstAtOrAfter(buckets: readonly RecordBucket[], second: number): number {
  let [lo, hi] = [0, buckets.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (buckets[mid]!.second < second) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function isDown(periods: readonly Span[], t: number): boolean {
  return periods.some((p) => t >= p.from && t < p.to);
}

function tally(seconds: Map<number, RecordBucket>, at: number, field: 'requests' | 'failed' | 'retries' | 'expired' | 'exhausted'): void {
  const second = Math.floor(at / 1000);
  let b = seconds.get(second);
  if (!b) seconds.set(second, (b = { second, requests: 0, failed: 0, retries: 0 }));
  b[field] = (b[field] ?? 0) + 1;
}

/** Retries further apart than the longest wait a policy allows cannot be one backlog draining. */
function quietGapOf(policies: readonly BackoffPolicy[]): number {
  return Math.max(1, ...policies.map((p) => p.max / 1000)) + 1;
}

function latenessFigures(ms: number[]): OutageFigures['lateness'] {
  if (ms.length === 0) return null;
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return { p50Ms: at(0.5), p95Ms: at(0.95), maxMs: Math.round(sorted[sorted.length - 1]!) };
}
