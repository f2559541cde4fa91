import type { RecordBucket } from '../endpoints/recording';

/** A failure period in epoch ms: attempts in [from, to) failed. */
export interface Span {
  from: number;
  to: number;
}

/** The peak after a recovery is the highest mean over this many seconds: one second's count is mostly timer bunching. */
export const PEAK_WINDOW_S = 5;
/** The backlog has drained when this share of its retries went out: the last few are jitter's stragglers. */
export const DRAINED_SHARE = 0.9;

/** One failure period's figures. */
export interface PeriodFigures {
  from: string;
  to: string;
  requestsWhileDown: number;
  peakAfterRecovery: number;
  drainSeconds: number;
  lastRetrySeconds: number;
}

/**
 * What an outage cost, recorded or replayed: the field names are stable (`simulate --json`). With several
 * failure periods, `requestsWhileDown` is their sum and the others their largest.
 */
export interface OutageFigures {
  /** Requests to the endpoint in all. */
  requests: number;
  /** Requests that failed inside a failure period. */
  requestsWhileDown: number;
  /** Requests per second after a recovery, before the next period: the highest mean over PEAK_WINDOW_S seconds. */
  peakAfterRecovery: number;
  /** From a recovery until DRAINED_SHARE of the retries of the backlog it left had gone out, in s. */
  drainSeconds: number;
  /** From a recovery to the last retry of that backlog, in s: one delivery whose jitter drew a long wait. */
  lastRetrySeconds: number;
  expired: number;
  exhausted: number;
  /** From first attempt to delivery, over the deliveries replayed; null for what was recorded (not kept). */
  lateness: { p50Ms: number; p95Ms: number; maxMs: number } | null;
  periods: PeriodFigures[];
}

/**
 * The figures of per-second buckets (and quiet hours, which only add requests), by one set of rules for the
 * recording and a replay alike, so that the two compare. A recovery's backlog is the retries that follow
 * it, each within `quietGapS` of the one before (longer than any wait of the policy), before the next period.
 */
export function outageFigures(
  seconds: readonly RecordBucket[],
  hours: readonly RecordBucket[],
  periods: readonly Span[],
  quietGapS: number,
): Omit<OutageFigures, 'lateness'> {
  const sum = <T>(items: readonly T[], value: (item: T) => number) => items.reduce((n, item) => n + value(item), 0);
  const perPeriod = periods.map((p, i) => periodFigures(seconds, p, periods[i + 1]?.from ?? Infinity, quietGapS));
  const largest = (key: 'peakAfterRecovery' | 'drainSeconds' | 'lastRetrySeconds') => Math.max(0, ...perPeriod.map((p) => p[key]));
  return {
    requests: sum(seconds, (b) => b.requests) + sum(hours, (b) => b.requests),
    requestsWhileDown: sum(perPeriod, (p) => p.requestsWhileDown),
    peakAfterRecovery: largest('peakAfterRecovery'),
    drainSeconds: largest('drainSeconds'),
    lastRetrySeconds: largest('lastRetrySeconds'),
    expired: sum(seconds, (b) => b.expired ?? 0) + sum(hours, (b) => b.expired ?? 0),
    exhausted: sum(seconds, (b) => b.exhausted ?? 0) + sum(hours, (b) => b.exhausted ?? 0),
    periods: perPeriod,
  };
}

function periodFigures(seconds: readonly RecordBucket[], p: Span, nextFrom: number, quietGapS: number): PeriodFigures {
  const [fromS, toS] = [Math.floor(p.from / 1000), Math.floor(p.to / 1000)];
  const requestsWhileDown = seconds.reduce((n, b) => (b.second >= fromS && b.second <= toS ? n + b.failed : n), 0);
  const after = seconds.filter((b) => b.second >= toS && b.second * 1000 < nextFrom);
  // in the second of the recovery, what failed came before it
  const sent = new Map(after.map((b) => [b.second, b.second === toS ? b.requests - b.failed : b.requests]));
  let peak = 0;
  for (const b of after) {
    let n = 0;
    for (let s = b.second; s < b.second + PEAK_WINDOW_S; s++) n += sent.get(s) ?? 0;
    peak = Math.max(peak, n / PEAK_WINDOW_S);
  }
  const backlog: RecordBucket[] = [];
  for (const b of after) {
    const previous = backlog.length ? backlog[backlog.length - 1]!.second : p.to / 1000;
    if (b.second > toS && b.retries > 0 && b.second - previous <= quietGapS) backlog.push(b);
  }
  const since = (b: RecordBucket | undefined) => (b ? Math.round((b.second + 1 - p.to / 1000) * 10) / 10 : 0);
  const total = backlog.reduce((n, b) => n + b.retries, 0);
  let counted = 0;
  const drained = backlog.find((b) => (counted += b.retries) >= DRAINED_SHARE * total);
  return {
    from: new Date(p.from).toISOString(),
    to: new Date(p.to).toISOString(),
    requestsWhileDown,
    peakAfterRecovery: Math.round(peak * 10) / 10,
    drainSeconds: since(drained),
    lastRetrySeconds: since(backlog[backlog.length - 1]),
  };
}
