/**
 * What an endpoint's workflow keeps so that its outages can be replayed under another policy or retry
 * budget (`redeliver simulate --from-endpoint`, replayOutage), bounded whatever the traffic
 * (docs/outage-replay.md):
 *
 * - per second, around failures: attempts that ended (requests), the failed ones (sending not possible, as
 *   the downtime ledger judges), the retries among them, first attempts by arrival profile, and deliveries
 *   that ended expired or exhausted. A second is kept in detail while it, or a second within CONTEXT_S of
 *   it, had a failure, a retry or such an end: an outage, its drain and five minutes either side;
 * - per hour, the rest: quiet seconds (first attempts that got through, which no policy changes) fold into
 *   their hour once nothing busy lies within CONTEXT_S. At most KEPT_DETAIL_SECONDS seconds stay in detail;
 *   past that the oldest fold too, and `detailFrom` says where the detail starts;
 * - failure periods: the downtime ledger's spells with a 1 s threshold and no reconnections, so every spell
 *   longer than a second (the last 200), with its attempts and most frequent failure code;
 * - arrival profiles (kind and policy) of first attempts, at most KEPT_PROFILES; the budget workers report.
 *
 * Pure and deterministic (workflow code): plain JSON data that travels through continue-as-new.
 */
import type { BackoffPolicy, MessageKind } from '../policy/types';
import { endpointDowntimeReport, openEndpointLedger, recordOutcomes, sendingWasPossible, type EndpointLedger } from './downtime';
import { mergeBySecond } from './timeline';
import type { ArrivalProfile, AttemptOutcome, EndpointReport, ReportedBudget } from './types';

/** Seconds kept in detail: an hour of outage and drain (about 250 KB of state at the most). */
export const KEPT_DETAIL_SECONDS = 3_600;
/** A quiet second this close to a busy one stays in detail: the replay sees what came just before and after. */
export const CONTEXT_S = 300;
/** Distinct arrival profiles kept; a further one counts under the first of its kind. */
export const KEPT_PROFILES = 16;
/** A spell of failures up to this long is left out of the failure periods: a glitch no policy changes much. */
export const PERIOD_THRESHOLD_MS = 1_000;
export const RECORDING_FORMAT = 'redeliver-outage/1';
const HOUR_S = 3_600;

/** One second's (or hour's) attempts at an endpoint. */
export interface RecordBucket {
  /** Epoch seconds: the second, or an hour's first second. */
  second: number;
  /** Attempts that ended in it. */
  requests: number;
  /** Those that could not be sent (not delivered, not refused as a client error). */
  failed: number;
  /** Those that were not a delivery's first attempt. */
  retries: number;
  /** First attempts, by index into the recording's `profiles`. */
  arrivals?: number[];
  expired?: number;
  exhausted?: number;
  /** Retries planned for this second that said how late they went out, and their lateness in all (ms). */
  late?: number;
  lateMs?: number;
}

/** The counts a bucket has only when they are not 0. */
const SPARSE_COUNTS = ['expired', 'exhausted', 'late', 'lateMs'] as const;

export type RecordedBudget = ReportedBudget | 'unknown';

/** The workflow's state. */
export interface EndpointRecording {
  profiles: ArrivalProfile[];
  seconds: RecordBucket[];
  hours: RecordBucket[];
  /** Spells of failures, by the downtime ledger's rules; null until the first attempt. */
  failures: EndpointLedger | null;
  budget: RecordedBudget;
  /** Epoch seconds: detail before this was folded into hours for room; null while none was. */
  detailFrom: number | null;
}

/** A spell of failures as a recording file has it. */
export interface FailurePeriod {
  from: string;
  to: string;
  attempts: number;
  failures: number;
  /** The most frequent failure code. */
  reason: string;
  /** Still failing at the end of the window: `to` is that end. */
  ongoing?: boolean;
}

/** A window of a recording: what `redeliver endpoint export` writes and `simulate --from-file` reads. */
export interface OutageRecording {
  format: typeof RECORDING_FORMAT;
  endpoint: string;
  from: string;
  to: string;
  /** False when detail from the start of the asked window was folded away: the window starts later. */
  complete: boolean;
  budget: RecordedBudget;
  profiles: ArrivalProfile[];
  periods: FailurePeriod[];
  seconds: RecordBucket[];
  hours: RecordBucket[];
}

export function openRecording(): EndpointRecording {
  return { profiles: [], seconds: [], hours: [], failures: null, budget: 'unknown', detailFrom: null };
}

/** The profile of a delivery whose first attempt started at `firstAttemptAt`: a deadline becomes an age bound. */
export function arrivalProfile(kind: MessageKind, policy: BackoffPolicy, firstAttemptAt: number): ArrivalProfile {
  if (policy.deadline === null) return { kind, policy };
  const untilDeadline = Math.max(0, Math.ceil((policy.deadline - firstAttemptAt) / 1000) * 1000);
  return { kind, policy: { ...policy, maxAge: Math.min(policy.maxAge ?? Infinity, untilDeadline), deadline: null } };
}

export function sameProfile(a: ArrivalProfile | undefined, b: ArrivalProfile | undefined): boolean {
  if (!a || !b) return a === b;
  const keys = Object.keys(a.policy) as (keyof BackoffPolicy)[];
  return a.kind === b.kind && keys.length === Object.keys(b.policy).length && keys.every((k) => a.policy[k] === b.policy[k]);
}

/** The recording after `outcomes`, which are in time order and follow the ones recorded before. */
export function recordAttempts(recording: EndpointRecording, outcomes: readonly AttemptOutcome[]): EndpointRecording {
  const timed = outcomes.filter((o) => Number.isFinite(o.at));
  if (timed.length === 0) return recording;
  let profiles = recording.profiles;
  const buckets = new Map<number, RecordBucket>();
  for (const o of timed) {
    const n = o.count ?? 1;
    const b = bucketIn(buckets, Math.floor(o.at / 1000));
    b.requests += n;
    if (!sendingWasPossible(o)) b.failed += n;
    if (o.retry) b.retries += n;
    if (o.arrival) {
      let i = profiles.findIndex((p) => sameProfile(p, o.arrival));
      if (i < 0 && profiles.length < KEPT_PROFILES) [profiles, i] = [[...profiles, o.arrival], profiles.length];
      b.arrivals = addAt(b.arrivals, Math.max(0, i < 0 ? profiles.findIndex((p) => p.kind === o.arrival!.kind) : i), n);
    }
  }
  const failures = recordOutcomes(
    recording.failures ?? openEndpointLedger({ thresholdMs: PERIOD_THRESHOLD_MS, reconnectWindowMs: 0 }, timed[0]!.at),
    timed,
  );
  return fold({ ...recording, profiles, failures, seconds: mergeBySecond(recording.seconds, sortedBuckets(buckets), addBuckets) });
}

/** The recording with what a report tells besides its attempts (in any order): ends, how late retries went, the budget. */
export function recordReport(recording: EndpointRecording, report: Pick<EndpointReport, 'ended' | 'late' | 'budget'>): EndpointRecording {
  const buckets = new Map<number, RecordBucket>();
  const count = (at: number, key: (typeof SPARSE_COUNTS)[number], n: number) => {
    if (!Number.isFinite(at)) return;
    const b = bucketIn(buckets, Math.floor(at / 1000));
    b[key] = (b[key] ?? 0) + n;
  };
  for (const e of report.ended ?? []) count(e.at, e.outcome, e.count ?? 1);
  for (const l of report.late ?? []) {
    count(l.plannedAt, 'late', l.count);
    count(l.plannedAt, 'lateMs', l.totalMs);
  }
  const budget =
    report.budget === undefined || JSON.stringify(report.budget) === JSON.stringify(recording.budget) ? recording.budget : report.budget;
  if (buckets.size === 0) return budget === recording.budget ? recording : { ...recording, budget };
  return fold({ ...recording, budget, seconds: mergeBySecond(recording.seconds, sortedBuckets(buckets), addBuckets) });
}

/**
 * The window from `since` (default: all that is kept) to `now`, as a recording file. It starts where the
 * detail starts when that is later (then `complete` is false); hours overlapping the window count whole.
 */
export function exportRecording(recording: EndpointRecording, endpoint: string, now: number, since?: number): OutageRecording {
  const detailFrom = recording.detailFrom === null ? -Infinity : recording.detailFrom * 1000;
  const earliest = Math.min(
    recording.seconds[0]?.second ?? Infinity,
    recording.hours[0]?.second ?? Infinity,
    Math.floor((recording.failures?.openedAt ?? Infinity) / 1000),
  );
  const from = Math.min(Math.max(since ?? earliest * 1000, detailFrom), now);
  const report = recording.failures && endpointDowntimeReport(recording.failures, now, from);
  const periods: FailurePeriod[] = (report?.periods ?? []).map(({ from, to, attempts, failures, reason }) => ({
    from,
    to,
    attempts,
    failures,
    reason,
  }));
  const current = report?.current;
  if (current?.countsAsDowntime) {
    const start = new Date(Math.max(Date.parse(current.since), from)).toISOString();
    periods.push({
      from: start,
      to: new Date(now).toISOString(),
      attempts: current.attempts,
      failures: current.failures,
      reason: current.reason,
      ongoing: true,
    });
  }
  return {
    format: RECORDING_FORMAT,
    endpoint,
    from: new Date(from).toISOString(),
    to: new Date(now).toISOString(),
    complete: since === undefined ? recording.detailFrom === null : detailFrom <= since,
    budget: recording.budget,
    profiles: recording.profiles,
    periods,
    seconds: recording.seconds.filter((b) => b.second >= Math.floor(from / 1000) && b.second * 1000 <= now),
    hours: recording.hours.filter((b) => b.second + HOUR_S > from / 1000 && b.second * 1000 <= now),
  };
}

/** A second had something a policy could change: a failure, a retry, a delivery that gave up. */
export function isBusy(b: RecordBucket): boolean {
  return b.failed > 0 || b.retries > 0 || (b.expired ?? 0) > 0 || (b.exhausted ?? 0) > 0;
}

export function addBuckets(x: RecordBucket, y: RecordBucket): RecordBucket {
  const sum: RecordBucket = {
    second: x.second,
    requests: x.requests + y.requests,
    failed: x.failed + y.failed,
    retries: x.retries + y.retries,
  };
  const arrivals = (y.arrivals ?? []).reduce((a, n, i) => addAt(a, i, n), x.arrivals);
  if (arrivals) sum.arrivals = arrivals;
  for (const key of SPARSE_COUNTS) {
    const n = (x[key] ?? 0) + (y[key] ?? 0);
    if (n > 0) sum[key] = n;
  }
  return sum;
}

/** Quiet seconds far from busy ones, and the oldest past the cap, folded into their hours. */
function fold(recording: EndpointRecording): EndpointRecording {
  const { seconds } = recording;
  const newest = seconds[seconds.length - 1]?.second ?? 0;
  const busy = seconds.filter(isBusy).map((b) => b.second);
  const kept: RecordBucket[] = [];
  const folded: RecordBucket[] = [];
  let k = 0;
  for (const b of seconds) {
    while (k < busy.length && busy[k]! < b.second) k++;
    const near = Math.min((busy[k] ?? Infinity) - b.second, b.second - (busy[k - 1] ?? -Infinity));
    (b.second < newest - CONTEXT_S && near > CONTEXT_S ? folded : kept).push(b);
  }
  let detailFrom = recording.detailFrom;
  const over = kept.length - KEPT_DETAIL_SECONDS;
  if (over > 0) {
    const dropped = kept.splice(0, over);
    folded.push(...dropped);
    detailFrom = Math.max(detailFrom ?? -Infinity, dropped[dropped.length - 1]!.second + 1);
  }
  if (folded.length === 0) return recording;
  const hours = new Map<number, RecordBucket>();
  for (const b of folded) {
    const hour = Math.floor(b.second / HOUR_S) * HOUR_S;
    const h = hours.get(hour);
    hours.set(hour, h ? addBuckets(h, { ...b, second: hour }) : { ...b, second: hour });
  }
  return { ...recording, seconds: kept, hours: mergeBySecond(recording.hours, sortedBuckets(hours), addBuckets), detailFrom };
}

function bucketIn(buckets: Map<number, RecordBucket>, second: number): RecordBucket {
  let b = buckets.get(second);
  if (!b) buckets.set(second, (b = { second, requests: 0, failed: 0, retries: 0 }));
  return b;
}

function sortedBuckets(buckets: Map<number, RecordBucket>): RecordBucket[] {
  return [...buckets.values()].sort((a, b) => a.second - b.second);
}

/** `counts` with n added at index i (a new array; missing places are 0). */
function addAt(counts: readonly number[] | undefined, i: number, n: number): number[] {
  const out = [...(counts ?? [])];
  while (out.length <= i) out.push(0);
  out[i]! += n;
  return out;
}
