import { humanDuration } from '../delivery/summary';
import {
  endpointDowntimeReport,
  openEndpointLedger,
  recordOutcomes,
  type EndpointLedger,
  type EndpointLedgerOptions,
} from '../endpoints/downtime';
import {
  FAILING_AFTER_MS,
  healthAt,
  openHealth,
  RECOVERY_MS,
  recordHealth,
  type EndpointHealth as Health,
  type EndpointHealthState,
  type HealthLedger,
} from '../endpoints/health';
import { EndpointEvents } from '../endpoints/operational-events';
import {
  exportRecording,
  openRecording,
  recordAttempts,
  recordReport,
  type EndpointRecording,
  type OutageRecording,
} from '../endpoints/recording';
import { addToTimeline, type Timeline } from '../endpoints/timeline';
import { mergePaces, paceInWords } from '../endpoints/pace';
import type { AttemptOutcome, EndpointDowntimeReport, EndpointPace, EndpointReport, EndpointStatus, PaceView } from '../endpoints/types';
import { nextWake } from '../endpoints/wake';
import { EndpointHealth } from '../contract';
import type { EndpointCarried, EndpointWorkflowInput } from '../contract';
import { EndpointControls, type ControlsEffects } from './endpoint-controls';
import type { WorkflowEffects } from './visibility';

/** Reports arrive about once a second from each worker: outcomes older than this are in order, and recorded. */
export const SETTLE_MS = 3_000;
/** A worker counts towards an endpoint's budget share while it reported within this time. */
export const WORKER_TTL_MS = 10_000;
/**
 * A worker's recovery pace is kept until it reports another, or this long: a pace goes only with a worker's attempts
 * (a long outage with nothing sent costs no reports), and an outage's probes report at least this often.
 */
export const PACE_TTL_MS = 60_000;
/** An endpoint workflow nobody reported to for this long completes (a new report starts a fresh one). */
export const IDLE_CLOSE_MS = 30 * 24 * 3600_000;

/** What an endpoint's state does outside it: Temporal's functions in the workflow, a recorder in unit tests. */
export interface EndpointEffects extends Pick<WorkflowEffects, 'details' | 'upsert'>, ControlsEffects {
  /** The state as a gauge, and a change counted (workflow metrics: not commands, not emitted on replay). */
  measure(previous: EndpointHealthState | null, state: EndpointHealthState): void;
  /** The endpoint was disabled, counted as a transition (a workflow metric). */
  countDisabled(): void;
}

export interface EndpointEnv {
  effects: EndpointEffects;
  /** Default Date.now: in a workflow, the time of the current workflow task. */
  now?: () => number;
}

/** The loop's next wait: until a report comes, or `timeoutMs` (a timer: at least 1 ms). */
export interface EndpointWait {
  /** When it wakes without a report (epoch ms). */
  at: number;
  timeoutMs: number;
  /** When the endpoint goes idle unless a report comes, as it was when the wait began. */
  idleEndsAt: number;
}

/** What is recorded, with the outcomes still settling counted in: what an operator should see now. */
interface Recorded {
  ledger: EndpointLedger;
  health: HealthLedger;
  timeline: Timeline;
  recording: EndpointRecording;
}

/**
 * One endpoint's state and its transitions, without Temporal (docs/endpoint-health.md): the reports of the
 * workers, recorded once settled into the downtime ledger, the health, the timeline and the recording; the
 * workers retrying to it and the retries their budgets held back; the operator's controls and the breaker;
 * the operational events; when the loop wakes next; what goes to the next run. The workflow calls it from its
 * handlers and its loop; the search attribute, the memo and patch markers go through `effects`, so which
 * command happens when (compared on replay) is decided here, and tested in test/unit/.
 */
export class EndpointTracker {
  readonly events: EndpointEvents;
  readonly controls: EndpointControls;
  /** Whether a report came since the loop's last wait began. */
  reported = false;
  private readonly endpoint: string;
  private readonly downtimeRules: EndpointLedgerOptions;
  private readonly run: number;
  private readonly effects: EndpointEffects;
  private readonly now: () => number;
  // opened at the first attempt reported, which comes a report round before the workflow itself
  private ledger: EndpointLedger | null;
  private health: HealthLedger;
  private timeline: Timeline;
  private recording: EndpointRecording;
  private readonly workers: Record<string, number>;
  private pending: AttemptOutcome[];
  private heldBack: { second: number; count: number }[];
  private lastReportAt: number;
  /** Each worker's latest recovery pace, and when it came (kept until replaced, at most PACE_TTL_MS). */
  private readonly paces: Record<string, { view: PaceView; at: number }>;
  /** The state in the search attribute; null until the first run's loop sets it. */
  private shownState: EndpointHealthState | null;

  constructor(input: Pick<EndpointWorkflowInput, 'endpoint' | 'downtime' | 'carried'>, env: EndpointEnv) {
    const carried = input.carried;
    this.endpoint = input.endpoint;
    this.downtimeRules = input.downtime ?? {};
    this.run = carried?.run ?? 1;
    this.effects = env.effects;
    this.now = env.now ?? Date.now;
    this.ledger = carried?.ledger ?? null;
    this.health = carried?.health ?? openHealth();
    this.timeline = carried?.timeline ?? [];
    this.recording = carried?.recording ?? openRecording();
    this.workers = { ...carried?.workers };
    this.pending = [...(carried?.pending ?? [])];
    this.heldBack = [...(carried?.heldBack ?? [])];
    this.lastReportAt = carried?.lastReportAt ?? this.now();
    this.paces = { ...carried?.paces };
    this.events = new EndpointEvents(this.endpoint, carried?.events);
    this.controls = new EndpointControls(carried?.controls, {
      effects: this.effects,
      now: this.now,
      disabled: (mode) => {
        this.events.disabled(mode);
        this.effects.countDisabled();
      },
    });
    this.shownState = carried ? healthAt(carried.health, this.now()).state : null;
  }

  /** A worker's report (the `report` signal): its outcomes settle before they are recorded. */
  report(report: EndpointReport): void {
    const now = this.now();
    this.pending.push(...report.outcomes);
    this.recording = recordReport(this.recording, report);
    this.workers[report.worker] = now;
    if (report.heldBack > 0) {
      const second = Math.floor(now / 1000);
      const last = this.heldBack[this.heldBack.length - 1];
      if (last?.second === second) last.count += report.heldBack;
      else this.heldBack.push({ second, count: report.heldBack });
    }
    if (report.deadLetters) this.events.deadLettered(report.deadLetters);
    if (report.pace) this.paces[report.worker] = { view: report.pace, at: now };
    this.lastReportAt = now;
    this.reported = true;
  }

  /**
   * The loop's step at `now`: records what has settled, forgets the workers and held-back retries gone quiet,
   * lets the controls judge the health (auto-disable, breaker), and shows the state: the search attribute when
   * it changed (with its event), the details always.
   */
  observe(now: number): void {
    this.settle(now);
    const h = healthAt(this.health, now);
    this.controls.observe(h, Object.keys(this.workers));
    this.effects.measure(this.shownState, h.state);
    if (h.state !== this.shownState) {
      this.events.health(this.shownState, h, h.state === 'failing' ? this.spellReason(now) : null);
      this.effects.upsert([{ key: EndpointHealth, value: h.state }]);
      this.shownState = h.state;
    }
    const pace = this.paceAt(now);
    this.effects.details(pace ? `${summaryOf(h, now)}\n\n${paceInWords(pace)}` : summaryOf(h, now));
  }

  /**
   * The loop's wait after `observe(now)`: until the next change still ahead (nextWake). A run from
   * before `wakeAhead` (the endpoint-wake-ahead patch) waited for the first change even when it had passed:
   * the patch is asked only then, so that a run that never met one records no marker.
   */
  nextWait(now: number, wakeAhead: () => boolean): EndpointWait {
    const idleEndsAt = this.lastReportAt + IDLE_CLOSE_MS;
    const h = healthAt(this.health, now);
    const settling = this.pending.length > 0;
    const before = Math.min(nextChange(now, settling, this.health, h, idleEndsAt), this.events.deadLettersDueAt ?? Infinity);
    const at =
      before <= now && !wakeAhead()
        ? before
        : nextWake(now, {
            settledAt: settling ? now + SETTLE_MS : null,
            health: this.health,
            idleEndsAt,
            deadLettersDueAt: this.events.deadLettersDueAt,
            autoDisableAt: this.controls.autoDisableAt(h),
          });
    return { at, timeoutMs: Math.max(1, at - now), idleEndsAt };
  }

  /**
   * After the loop's wait (`woken`: by a report): whether the run closes, idle. An endpoint with settings of
   * its own stays, idle or not (a fresh workflow would not have them), and counts its idle time again.
   */
  closesAfter(wait: EndpointWait, woken: boolean): boolean {
    this.reported = false;
    const idle = !woken && this.pending.length === 0 && this.now() >= wait.idleEndsAt;
    if (idle && this.controls.keepsOpen) this.lastReportAt = this.now();
    return idle && !this.controls.keepsOpen;
  }

  /** The `status` query; `asOf`: the client's time (a query's Date.now() is the last workflow task's, maybe days ago). */
  status(asOf?: number): EndpointStatus {
    const now = asOf ?? this.now();
    const c = this.current();
    const h = healthAt(c.health, now);
    const downtime = endpointDowntimeReport(c.ledger, now);
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    const pace = this.paceAt(now);
    return {
      endpoint: this.endpoint,
      state: h.state,
      failureRate: h.failureRate,
      attemptsLastMinute: h.attemptsLastMinute,
      heldBackLastMinute: this.heldBackSince(now),
      failingSince: iso(h.failingSince),
      recoveredAt: iso(h.recoveredAt),
      lastAttemptAt: iso(h.lastAttemptAt),
      workers: Object.values(this.workers).filter((t) => now - t < WORKER_TTL_MS).length,
      downtimeMs: downtime.totalMs,
      downtimePeriods: downtime.periods.length,
      summary: summaryOf(h, now),
      ...(pace && { pace }),
    };
  }

  /** The `downtime` query. */
  downtime(since?: number, asOf?: number): EndpointDowntimeReport {
    return endpointDowntimeReport(this.current().ledger, asOf ?? this.now(), since);
  }

  /** The `timeline` query. */
  timelineNow(): Timeline {
    return this.current().timeline;
  }

  /** The `recording` query. */
  recordingSince(since?: number, asOf?: number): OutageRecording {
    return exportRecording(this.current().recording, this.endpoint, asOf ?? this.now(), since);
  }

  /**
   * What the next run starts from. The workers, the outcomes settling and the held-back retries are the live
   * lists, not copies: a report that comes while the run waits for its handlers to finish goes with them.
   */
  carried(): EndpointCarried {
    return {
      run: this.run + 1,
      controls: this.controls.carried(),
      ledger: this.ledger ?? openEndpointLedger(this.downtimeRules, this.now()),
      health: this.health,
      timeline: this.timeline,
      recording: this.recording,
      events: this.events.carried(),
      workers: this.workers,
      pending: this.pending,
      heldBack: this.heldBack,
      lastReportAt: this.lastReportAt,
      paces: this.paces,
    };
  }

  /** The paces of the workers that reported one within PACE_TTL_MS of `now`, merged; null when none did. */
  private paceAt(now: number): EndpointPace | null {
    const fresh = Object.entries(this.paces).filter(([, p]) => now - p.at < PACE_TTL_MS);
    return mergePaces(Object.fromEntries(fresh.map(([worker, p]) => [worker, p.view])));
  }

  /** Records what has settled, in time order (reports of several workers interleave), and forgets what has aged out. */
  private settle(now: number): void {
    const settled = this.pending.filter((o) => o.at <= now - SETTLE_MS).sort((a, b) => a.at - b.at);
    if (settled.length) {
      this.pending = this.pending.filter((o) => o.at > now - SETTLE_MS);
      this.ledger = this.recorded(settled);
      this.health = recordHealth(this.health, settled);
      this.timeline = addToTimeline(this.timeline, settled);
      this.recording = recordAttempts(this.recording, settled);
    }
    for (const [worker, t] of Object.entries(this.workers)) if (now - t >= WORKER_TTL_MS) delete this.workers[worker];
    for (const [worker, p] of Object.entries(this.paces)) if (now - p.at >= PACE_TTL_MS) delete this.paces[worker];
    this.heldBack = this.heldBack.filter((h) => h.second > Math.floor(now / 1000) - 60);
  }

  private current(): Recorded {
    const settling = [...this.pending].sort((a, b) => a.at - b.at);
    return {
      ledger: this.recorded(settling),
      health: recordHealth(this.health, settling),
      timeline: addToTimeline(this.timeline, settling),
      recording: recordAttempts(this.recording, settling),
    };
  }

  private recorded(outcomes: AttemptOutcome[]): EndpointLedger {
    return recordOutcomes(this.ledger ?? openEndpointLedger(this.downtimeRules, outcomes[0]?.at ?? this.now()), outcomes);
  }

  /** The failing spell's most frequent failure, for its event; null before the first attempt was recorded. */
  private spellReason(now: number): string | null {
    return this.ledger ? (endpointDowntimeReport(this.ledger, now).current?.reason ?? null) : null;
  }

  private heldBackSince(now: number): number {
    return this.heldBack.filter((h) => h.second > Math.floor(now / 1000) - 60).reduce((n, h) => n + h.count, 0);
  }
}

/**
 * The wait before endpoint-wake-ahead, kept for the runs that took it: when the endpoint changes by time alone
 * (outcomes settle, a spell turns into failing, recovering turns healthy, or it goes idle), passed or not.
 */
function nextChange(now: number, settling: boolean, health: HealthLedger, h: Health, idleEnds: number): number {
  return Math.min(
    settling ? now + SETTLE_MS : Infinity,
    health.spellSince !== null && health.failingSince === null ? health.spellSince + FAILING_AFTER_MS : Infinity,
    h.state === 'recovering' && h.recoveredAt !== null ? h.recoveredAt + RECOVERY_MS : Infinity,
    idleEnds,
  );
}

function summaryOf(h: Health, now: number): string {
  const rate = `${Math.round(h.failureRate * 100)}% of attempts failed in the last minute`;
  if (h.state === 'failing') return `failing for ${humanDuration(now - (h.failingSince ?? now))}: ${rate}`;
  if (h.state === 'recovering') return `recovering: attempts go through again, parked deliveries drain at the retry budget's pace; ${rate}`;
  return `healthy: ${rate}`;
}
