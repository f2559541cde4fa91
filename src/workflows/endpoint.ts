import { condition, patched, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
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
  type EndpointHealthState,
  type HealthLedger,
} from '../endpoints/health';
import { EndpointEvents, type EventsCarried } from '../endpoints/operational-events';
import { exportRecording, openRecording, recordAttempts, recordReport, type EndpointRecording } from '../endpoints/recording';
import { addToTimeline, type Timeline } from '../endpoints/timeline';
import type { AttemptOutcome, EndpointStatus } from '../endpoints/types';
import { nextWake } from '../endpoints/wake';
import {
  EndpointHealth,
  endpointDowntimeQuery,
  endpointRecordingQuery,
  endpointReportSignal,
  endpointStatusQuery,
  endpointTimelineQuery,
} from './definitions';
import { EndpointControls, type ControlsCarried } from './endpoint-controls';
import { continueAsNewWhenIdle, historyTooLong } from './history';
import { countTransition, measureState, sendEvents } from './operational-events';
import { ENDPOINT_WAKE_AHEAD } from './patches';

/** Reports arrive about once a second from each worker: outcomes older than this are in order, and recorded. */
export const SETTLE_MS = 3_000;
/** A worker counts towards an endpoint's budget share while it reported within this time. */
export const WORKER_TTL_MS = 10_000;
/** An endpoint workflow nobody reported to for this long completes (a new report starts a fresh one). */
export const IDLE_CLOSE_MS = 30 * 24 * 3600_000;
const DEFAULT_HISTORY_LIMIT = 2_000;

export interface EndpointCarried {
  run: number;
  ledger: EndpointLedger;
  health: HealthLedger;
  timeline: Timeline;
  /** The operator's settings (workflows/endpoint-controls.ts); absent in runs from before them. */
  controls?: ControlsCarried;
  /** Absent in runs carried over from before recordings were kept. */
  recording?: EndpointRecording;
  /** The operational events' sequence and the dead letters not told yet; absent in runs from before them. */
  events?: EventsCarried;
  workers: Record<string, number>;
  pending: AttemptOutcome[];
  heldBack: { second: number; count: number }[];
  lastReportAt: number;
}

export interface EndpointWorkflowInput {
  endpoint: string;
  /** Downtime rules (defaults: the guide's 1 min, and 3 attempts within 3 min for a reconnection). */
  downtime?: EndpointLedgerOptions;
  carried?: EndpointCarried;
  historyLimit?: number;
}

/**
 * One endpoint's health and downtime, from the attempts every worker reports (activities/endpoint-reporter.ts):
 * failing / recovering / healthy in the `EndpointHealth` search attribute, the downtime ledger of the guide,
 * the attempts per second for a plot, the workers retrying to it (each takes 1/N of the retry budget), and a
 * bounded recording of its attempts for replaying its outages (endpoints/recording.ts). The recording added
 * state and a query, no command: running endpoint workflows need no patch (endpointWorkflow_reports.json replays).
 */
export async function endpointWorkflow(input: EndpointWorkflowInput): Promise<EndpointStatus> {
  const { endpoint } = input;
  const carried = input.carried;
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  // opened at the first attempt reported, which comes a report round before the workflow itself
  let ledger: EndpointLedger | null = carried?.ledger ?? null;
  const recorded = (outcomes: AttemptOutcome[]) =>
    recordOutcomes(ledger ?? openEndpointLedger(input.downtime ?? {}, outcomes[0]?.at ?? Date.now()), outcomes);
  let health = carried?.health ?? openHealth();
  let timeline = carried?.timeline ?? [];
  let recording = carried?.recording ?? openRecording();
  const workers: Record<string, number> = { ...carried?.workers };
  let pending: AttemptOutcome[] = [...(carried?.pending ?? [])];
  let heldBack = [...(carried?.heldBack ?? [])];
  let lastReportAt = carried?.lastReportAt ?? Date.now();
  const events = new EndpointEvents(endpoint, carried?.events);
  const controls = new EndpointControls(carried?.controls, (mode) => {
    events.disabled(mode);
    countTransition(endpoint, 'disabled');
  });
  // events a handler started sending: the run does not end (or continue as new) before they have gone
  const announcing = new Set<Promise<void>>();
  controls.register(() => {
    const sent = sendEvents(events, Date.now());
    announcing.add(sent);
    void sent.finally(() => announcing.delete(sent));
  });
  const announced = () => Promise.all(announcing);
  let reported = false;
  let shownState: EndpointHealthState | null = carried ? healthAt(carried.health, Date.now()).state : null;

  const activeWorkers = (now: number) => Object.values(workers).filter((t) => now - t < WORKER_TTL_MS).length;
  const heldBackLastMinute = (now: number) =>
    heldBack.filter((h) => h.second > Math.floor(now / 1000) - 60).reduce((n, h) => n + h.count, 0);
  /** What is recorded, with the outcomes still settling counted in: what an operator should see now. */
  const current = () => {
    const settling = [...pending].sort((a, b) => a.at - b.at);
    return {
      ledger: recorded(settling),
      health: recordHealth(health, settling),
      timeline: addToTimeline(timeline, settling),
      recording: recordAttempts(recording, settling),
    };
  };
  // a query's Date.now() is the last workflow task's time, maybe days ago: the client passes its own
  const status = (asOf?: number): EndpointStatus => {
    const now = asOf ?? Date.now();
    const c = current();
    const h = healthAt(c.health, now);
    const downtime = endpointDowntimeReport(c.ledger, now);
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return {
      endpoint,
      state: h.state,
      failureRate: h.failureRate,
      attemptsLastMinute: h.attemptsLastMinute,
      heldBackLastMinute: heldBackLastMinute(now),
      failingSince: iso(h.failingSince),
      recoveredAt: iso(h.recoveredAt),
      lastAttemptAt: iso(h.lastAttemptAt),
      workers: activeWorkers(now),
      downtimeMs: downtime.totalMs,
      downtimePeriods: downtime.periods.length,
      summary: summaryOf(h.state, h.failureRate, h.failingSince, now),
    };
  };

  setHandler(endpointReportSignal, (report) => {
    pending.push(...report.outcomes);
    recording = recordReport(recording, report);
    workers[report.worker] = Date.now();
    if (report.heldBack > 0) {
      const second = Math.floor(Date.now() / 1000);
      const last = heldBack[heldBack.length - 1];
      if (last?.second === second) last.count += report.heldBack;
      else heldBack.push({ second, count: report.heldBack });
    }
    if (report.deadLetters) events.deadLettered(report.deadLetters);
    lastReportAt = Date.now();
    reported = true;
  });
  setHandler(endpointStatusQuery, status);
  setHandler(endpointDowntimeQuery, (since?: number, asOf?: number) => endpointDowntimeReport(current().ledger, asOf ?? Date.now(), since));
  setHandler(endpointTimelineQuery, () => current().timeline);
  setHandler(endpointRecordingQuery, (since?: number, asOf?: number) =>
    exportRecording(current().recording, endpoint, asOf ?? Date.now(), since),
  );

  for (;;) {
    const now = Date.now();
    // record what has settled, in time order: reports of several workers interleave
    const settled = pending.filter((o) => o.at <= now - SETTLE_MS).sort((a, b) => a.at - b.at);
    if (settled.length) {
      pending = pending.filter((o) => o.at > now - SETTLE_MS);
      ledger = recorded(settled);
      health = recordHealth(health, settled);
      timeline = addToTimeline(timeline, settled);
      recording = recordAttempts(recording, settled);
    }
    for (const [worker, t] of Object.entries(workers)) if (now - t >= WORKER_TTL_MS) delete workers[worker];
    heldBack = heldBack.filter((h) => h.second > Math.floor(now / 1000) - 60);

    const h = healthAt(health, now);
    controls.observe(h, Object.keys(workers));
    measureState(endpoint, shownState, h.state);
    if (h.state !== shownState) {
      events.health(shownState, h, h.state === 'failing' && ledger ? (endpointDowntimeReport(ledger, now).current?.reason ?? null) : null);
      upsertSearchAttributes([{ key: EndpointHealth, value: h.state }]);
      shownState = h.state;
    }
    setCurrentDetails(summaryOf(h.state, h.failureRate, h.failingSince, now));
    await sendEvents(events, now);

    if (historyTooLong(historyLimit)) {
      await announced();
      await continueAsNewWhenIdle<typeof endpointWorkflow>({
        endpoint,
        historyLimit,
        carried: {
          run: (carried?.run ?? 1) + 1,
          controls: controls.carried(),
          ledger: ledger ?? openEndpointLedger(input.downtime ?? {}, Date.now()),
          health,
          timeline,
          recording,
          events: events.carried(),
          workers,
          pending,
          heldBack,
          lastReportAt,
        },
      });
    }

    // wake for the next report, or when something changes by time alone
    const idleEnds = lastReportAt + IDLE_CLOSE_MS;
    const before = Math.min(nextChange(now, pending.length > 0, health, h, idleEnds), events.deadLettersDueAt ?? Infinity);
    const wakeAt =
      before <= now && !patched(ENDPOINT_WAKE_AHEAD)
        ? before
        : nextWake(now, {
            settledAt: pending.length > 0 ? now + SETTLE_MS : null,
            health,
            idleEndsAt: idleEnds,
            deadLettersDueAt: events.deadLettersDueAt,
            autoDisableAt: controls.autoDisableAt(h),
          });
    const woken = await condition(() => reported, Math.max(1, wakeAt - now));
    reported = false;
    const idle = !woken && pending.length === 0 && Date.now() >= idleEnds;
    // an endpoint with settings of its own stays, idle or not: a fresh workflow would not have them
    if (idle && controls.keepsOpen) lastReportAt = Date.now();
    else if (idle) {
      await announced();
      return status();
    }
  }
}

/**
 * The wait before ENDPOINT_WAKE_AHEAD, kept for the runs that took it: when the endpoint changes by time alone
 * (outcomes settle, a spell turns into failing, recovering turns healthy, or it goes idle), passed or not.
 */
function nextChange(now: number, settling: boolean, health: HealthLedger, h: ReturnType<typeof healthAt>, idleEnds: number): number {
  return Math.min(
    settling ? now + SETTLE_MS : Infinity,
    health.spellSince !== null && health.failingSince === null ? health.spellSince + FAILING_AFTER_MS : Infinity,
    h.state === 'recovering' && h.recoveredAt !== null ? h.recoveredAt + RECOVERY_MS : Infinity,
    idleEnds,
  );
}

function summaryOf(state: EndpointHealthState, failureRate: number, failingSince: number | null, now: number): string {
  const rate = `${Math.round(failureRate * 100)}% of attempts failed in the last minute`;
  if (state === 'failing') return `failing for ${humanDuration(now - (failingSince ?? now))}: ${rate}`;
  if (state === 'recovering') return `recovering: attempts go through again, parked deliveries drain at the retry budget's pace; ${rate}`;
  return `healthy: ${rate}`;
}
