import type { Verdict } from '../classify/types';
import type { BackoffPolicy, MessageKind } from '../policy/types';
import type { DowntimePeriod } from '../subscription/types';

/**
 * How one attempt at an endpoint ended, as the downtime ledger and the timeline take it. `class` is the
 * classifier's verdict: `well-known` is the throttled class (a limit, a quota, no consumer).
 */
export interface AttemptOutcome {
  /** When the attempt ended (epoch ms). */
  at: number;
  /** Whether it was delivered. */
  ok: boolean;
  class: Verdict;
  /** The classifier's stable code: `http-503`, `net-ECONNRESET`, … (`ok` for a success, by convention). */
  code: string;
  /**
   * Attempts this stands for (default 1): a worker reports a run of attempts that ended alike within one
   * second as one, at the first one's time, so a busy endpoint's reports stay small.
   */
  count?: number;
  /** A delivery's first attempt: what arrived, for a replay of the endpoint's outages (docs/outage-replay.md, "What an endpoint keeps"). */
  arrival?: ArrivalProfile;
  /** An attempt after a delivery's first (a retry). Neither this nor `arrival`: a worker from before they were reported. */
  retry?: boolean;
}

/**
 * What a replay needs to know of a delivery that arrived: its kind and its policy, with a deadline folded
 * into `maxAge` (the time from the first attempt to the deadline, in whole seconds, when that is sooner),
 * so that deliveries alike share one profile and `deadline` is always null.
 */
export interface ArrivalProfile {
  kind: MessageKind;
  policy: BackoffPolicy;
}

/** Deliveries whose retrying ended without delivering, as a worker reports them (expired or exhausted). */
export interface DeliveryEnd {
  /** When it ended (epoch ms). */
  at: number;
  outcome: 'expired' | 'exhausted';
  /** Ends this stands for (default 1). */
  count?: number;
}

/** The outcomes that leave a dead letter (DEAD_LETTER_STATES). */
export type DeadLetterOutcome = 'rejected' | 'expired' | 'exhausted' | 'dropped';

/** Dead letters of one endpoint, tallied by a worker between two reports and by the workflow over a window. */
export interface DeadLetterTally {
  count: number;
  outcomes: Partial<Record<DeadLetterOutcome, number>>;
  /** The earliest and the latest dead letter tallied (epoch ms). */
  first: { deliveryId: string; at: number };
  last: { deliveryId: string; at: number };
}

/** How late the retries planned for one second went out (planned by a backoff timer, or a budget slot). */
export interface RetryLateness {
  /** When the first of them was planned (epoch ms). */
  plannedAt: number;
  count: number;
  totalMs: number;
}

/** The retry budget a worker runs with (RetryBudget), as it reports it: 'off' when it holds nothing back. */
export type ReportedBudget = { perSecond: number; burst: number } | 'off';

/** Attempts at an endpoint in one second (Timeline): `failed` counts client errors too. */
export interface TimelineBucket {
  /** Epoch seconds. */
  second: number;
  ok: number;
  failed: number;
}

/** A downtime period of an endpoint: the subscription ledger's period, with what was tried during it. */
export interface EndpointDowntimePeriod extends DowntimePeriod {
  /** Attempts from the first failure to the one that got through, both included. */
  attempts: number;
  /** The failed ones among them: `attempts - 1` for an ended period. */
  failures: number;
}

/** The spell going on at the time of the report: failures since the last attempt that got through. */
export interface CurrentSpell {
  /** The spell's first failure, whatever the report's `since`. */
  since: string;
  durationMs: number;
  attempts: number;
  failures: number;
  /** The most frequent failure code (the first one seen on a tie). */
  reason: string;
  /** Longer than the threshold and no longer a possible reconnection. */
  countsAsDowntime: boolean;
}

/**
 * The guide's downtime of one endpoint: spells in which sending was not possible, longer than the threshold
 * (1 min) and not a reconnection (only connection failures, at least 3 attempts within 3 min).
 */
export interface EndpointDowntimeReport {
  thresholdMs: number;
  reconnectWindowMs: number;
  reconnectAttempts: number;
  /** Since when downtime is counted: the report's `since`, or when the ledger opened if that is later. */
  since: string;
  /** The downtime of the periods reported plus the part of the current spell after `since`, when it counts. */
  totalMs: number;
  /** Ended downtime periods that end after `since`, clipped to it; most recent last. */
  periods: EndpointDowntimePeriod[];
  /** Spells not longer than the threshold, since the ledger opened (not filtered by `since`). */
  glitches: number;
  /** Spells that were reconnections, since the ledger opened (not filtered by `since`). */
  reconnections: number;
  current: CurrentSpell | null;
  /**
   * False when the ledger has dropped periods (it keeps the last 200) that ended after `since`: `periods`
   * and `totalMs` then miss some downtime.
   */
  complete: boolean;
}

/** Where an endpoint stands for a worker's recovery pacer (docs/endpoint-health.md, "Outages: holds and the recovery pace"). */
export type PaceState = 'healthy' | 'failing' | 'recovering';

/** The pace of one endpoint at one worker, and why (endpoint show, the endpoint workflow's details, metrics). */
export interface PaceView {
  state: PaceState;
  /** Sends in flight allowed now (the window); 0 while failing (probes only). */
  window: number;
  inFlight: number;
  /** The cap on the window: the endpoint's max-in-flight share, or the worker's. */
  cap: number;
  /** In words: why the window is what it is (`slow start: doubling while it succeeds`, `halved: http-503 at …`, …). */
  why: string;
  /** Epoch ms: when the state last changed. */
  changedAt: number;
}

/** What a worker reports to an endpoint's workflow about once a second (EndpointReporter). */
export interface EndpointReport {
  /** The reporting worker (pid@host/random): the endpoint counts the workers retrying to it. */
  worker: string;
  /** The attempts it sent since its last report, in the order they ended. */
  outcomes: AttemptOutcome[];
  /** Retries its budget held back since its last report. */
  heldBack: number;
  /** Deliveries whose retrying ended expired or exhausted since its last report (absent from older workers). */
  ended?: DeliveryEnd[];
  /** How late its retries went out since its last report, per second (absent from older workers). */
  late?: RetryLateness[];
  /** The retry budget it runs with (absent from older workers). */
  budget?: ReportedBudget;
  /** Deliveries to the endpoint that ended dead letters since its last report (absent from older workers). */
  deadLetters?: DeadLetterTally;
  /** Its recovery pace, while not healthy or just changed (absent from older workers, and while healthy). */
  pace?: PaceView;
}

/** An endpoint as `redeliver endpoints` shows it. Field names are stable (JSON output). */
export interface EndpointStatus {
  /** host[:port] */
  endpoint: string;
  state: 'healthy' | 'failing' | 'recovering';
  /** Failed attempts / attempts in the last minute (client errors are not failures of the endpoint). */
  failureRate: number;
  attemptsLastMinute: number;
  /** Retries the retry budget held back in the last minute. */
  heldBackLastMinute: number;
  failingSince: string | null;
  recoveredAt: string | null;
  lastAttemptAt: string | null;
  /** Workers that reported attempts to it in the last 10 s: each takes 1/N of the retry budget. */
  workers: number;
  /** The guide's downtime so far, and in how many periods. */
  downtimeMs: number;
  downtimePeriods: number;
  summary: string;
  /** The recovery pace of the workers that reported one in the last 10 s (absent when none did): merged, and per worker. */
  pace?: EndpointPace;
}

/**
 * The workers' paces merged: the worst state (failing, recovering, healthy), the windows, sends in flight and caps
 * summed, the why of a worker in that state; `workers`: each worker's own.
 */
export interface EndpointPace extends Omit<PaceView, 'changedAt'> {
  workers: Record<string, PaceView>;
}
