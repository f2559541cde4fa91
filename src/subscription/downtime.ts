import type { DowntimePeriod, DowntimeReport } from './types';

/** The guide: "If the subscription … is not possible for a period longer than one minute, then this time is considered as downtime." */
export const DEFAULT_DOWNTIME_THRESHOLD_MS = 60_000;
/** Ended periods a ledger keeps one by one; older ones still count in the total. */
export const KEPT_PERIODS = 50;

/**
 * The downtime accounting of one subscription, as plain data (it travels through continue-as-new).
 * Pure: every change returns a new ledger, times are given, not read.
 */
export interface DowntimeLedger {
  thresholdMs: number;
  since: number;
  /** When the current spell without a subscription began; null while subscribed. */
  downSince: number | null;
  downReason: string;
  /** Downtime of the ended periods. */
  totalMs: number;
  periods: { from: number; to: number; reason: string }[];
  outages: number;
}

/** A ledger for a subscription that starts at `at`, not subscribed yet: the first spell starts then. */
export function openLedger(thresholdMs: number, at: number): DowntimeLedger {
  return { thresholdMs, since: at, downSince: at, downReason: 'not subscribed yet', totalMs: 0, periods: [], outages: 0 };
}

/**
 * The subscription is down from `at` (nothing changes if it was down already). `outage` false for a
 * planned gap (renewing the subscription), which counts as downtime only if it lasts, but is no outage.
 */
export function markDown(ledger: DowntimeLedger, at: number, reason: string, outage = true): DowntimeLedger {
  if (ledger.downSince !== null) return ledger;
  return { ...ledger, downSince: at, downReason: reason, outages: ledger.outages + (outage ? 1 : 0) };
}

/**
 * The subscription works again at `at`: the spell ends, and counts as downtime when longer than the
 * threshold (the whole spell, as the guide says, not just what exceeds it).
 */
export function markUp(ledger: DowntimeLedger, at: number): DowntimeLedger {
  if (ledger.downSince === null) return ledger;
  const from = ledger.downSince;
  // a clock that went backwards between the worker and the workflow makes an empty spell, not a negative one
  const to = Math.max(at, from);
  const ended = { ...ledger, downSince: null, downReason: '' };
  if (to - from <= ledger.thresholdMs) return ended;
  return {
    ...ended,
    totalMs: ledger.totalMs + (to - from),
    periods: [...ledger.periods, { from, to, reason: ledger.downReason }].slice(-KEPT_PERIODS),
  };
}

/** What an operator reads at `now`: ended periods, and the spell going on, counted once it passes the threshold. */
export function downtimeReport(ledger: DowntimeLedger, now: number): DowntimeReport {
  const current =
    ledger.downSince === null
      ? null
      : (() => {
          const durationMs = Math.max(0, now - ledger.downSince);
          return { since: iso(ledger.downSince), durationMs, reason: ledger.downReason, countsAsDowntime: durationMs > ledger.thresholdMs };
        })();
  const periods: DowntimePeriod[] = ledger.periods.map((p) => ({
    from: iso(p.from),
    to: iso(p.to),
    durationMs: p.to - p.from,
    reason: p.reason,
  }));
  return {
    thresholdMs: ledger.thresholdMs,
    since: iso(ledger.since),
    totalMs: ledger.totalMs + (current?.countsAsDowntime ? current.durationMs : 0),
    periods,
    current,
    outages: ledger.outages,
  };
}

function iso(t: number): string {
  return new Date(t).toISOString();
}
