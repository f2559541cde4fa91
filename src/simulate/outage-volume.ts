import { BATCH_ENDPOINT_CONCURRENCY } from '../activities/batch';
import { DEFAULT_RECOVERY_MAX_IN_FLIGHT } from '../worker-services/pacer';
import { DEFAULT_BATCH_MESSAGES } from '../batching/batches';
import { DEFAULT_LINGER_MS } from '../batching/batcher';
import { HOLD_MAX_BYTES, HOLD_MAX_MESSAGES } from '../contract/hold';
import { DEFAULT_RETRY_BUDGET, type RetryBudgetOptions } from '../endpoints/budget';
import { FAILING_AFTER } from '../endpoints/health';
import { defaultPolicy } from '../policy/defaults';
import { formatDuration } from '../policy/duration';

/*
 * A 60 s outage at volume, in arithmetic (docs/outage-replay.md, "An outage at volume"): what today's design (each
 * message whose first attempt failed becomes a delivery of its own, its retries paced by the retry budget) and the
 * outage holds with the recovery pacer (docs/endpoint-health.md, "Outages") cost at a given rate, and what a cluster
 * needs for it. A fluid model: messages arrive evenly, every first attempt during the outage fails, every attempt
 * after it succeeds, and a backlog leaves in the order it came (oldest first: the budget's reserved slots, the hold's
 * most urgent first). It is fed with costs measured on this machine (bench/results) and says so.
 */

/** Costs per message and capacities, measured here (bench/results) or read from a recorded history; flags of the command. */
export interface VolumeCosts {
  /** Messages/s one worker delivers in batches to a healthy endpoint (bench section 6: 1,693/s on 2 cores). */
  workerRate: number;
  /** Delivery workflows/s one worker runs, one per message (bench section 6, one workflow per message: 26.8/s). */
  deliveryRate: number;
  /** Workflow starts/s the server sustains (the dev server here: 35–90/s). */
  serverStarts: number;
  /** Actions/s the namespace allows (Temporal Cloud's default namespace limit). */
  serverActions: number;
  /** History events of a batch message's own delivery (the recorded handed-over delivery: 17). */
  deliveryEvents: number;
  /** Bytes of that history: its payloads (4.2 KB recorded) and about `eventBytes` per event. */
  deliveryBytes: number;
  /** Search-attribute upserts of that delivery that are actions (recorded: 4, of which the 2 of patch markers are exempt). */
  deliveryUpserts: number;
  /** Activity executions per retry of a delivery: one that waits for its reserved budget slot, one that sends. */
  executionsPerRetry: number;
  /** One held message as its hold keeps it (JSON): the delivery, its payload and its first attempt (~900 B recorded). */
  heldBytes: number;
  /** One message's report in a `released` signal and its line in the hold's result. */
  reportBytes: number;
  /** History events per held message as measured; null: from the hold's structure (the four below). */
  holdEvents: number | null;
  /** A hold's own events: its start, first workflow task, completion. */
  holdBaseEvents: number;
  /** Per update (accepted, completed, and its workflow task's three). */
  updateEvents: number;
  /** Per signal (the signal and its workflow task's three). */
  signalEvents: number;
  /** Per release round (the activity's scheduled, started, completed and a workflow task). */
  roundEvents: number;
  /** Bytes of an event beyond its payloads. */
  eventBytes: number;
  /** Messages per `released` signal (measured in bench section 10: 32,300 held in 180 signals). */
  reportBatch: number;
  /** Messages per `due` query. */
  duePage: number;
  /** A release round (one activity) lasts at most this long. */
  roundMs: number;
  /** A batch's own actions, in either design: its start and its activity. */
  batchActions: number;
}

export interface VolumeScenario {
  /** Messages/s offered, one tenant, one endpoint. */
  rate: number;
  downMs: number;
  /** A message expires this long after its first attempt; null: never. */
  maxAgeMs: number | null;
  /** The retry budget of today's design, for all workers together. */
  budget: RetryBudgetOptions;
  /** Workers; null: as many as each design needs (the hold design: to drain its backlog within the outage's length). */
  workers: number | null;
  /** The endpoint's response time when healthy. */
  latencyMs: number;
  /** Requests/s the endpoint takes; null: as many as are sent. */
  endpointRate: number | null;
  /** The endpoint's max-in-flight setting; null: none. */
  endpointMaxInFlight: number | null;
  /** While the endpoint fails, each worker sends at most one probe per this long. */
  probeEveryMs: number;
  costs: VolumeCosts;
}

/** The design's fixed numbers (docs/batches.md, docs/endpoint-health.md "Outages"). */
export const VOLUME_DESIGN = {
  batchMessages: DEFAULT_BATCH_MESSAGES,
  lingerMs: DEFAULT_LINGER_MS,
  /** The recovery pacer's cap on sends in flight per worker per endpoint. */
  windowCap: DEFAULT_RECOVERY_MAX_IN_FLIGHT,
  /** A worker's batches' first attempts in flight to one endpoint (those sent as it turned failing). */
  batchInFlight: BATCH_ENDPOINT_CONCURRENCY,
  failingAfter: FAILING_AFTER,
  holdMaxMessages: HOLD_MAX_MESSAGES,
  holdMaxBytes: HOLD_MAX_BYTES,
  /** Temporal's limit on one workflow's history (history.maxSize's default: 50 MiB). */
  historyMaxBytes: 50 * 1024 * 1024,
} as const;

export const DEFAULT_VOLUME_COSTS: VolumeCosts = {
  workerRate: 1_700,
  deliveryRate: 26.8,
  serverStarts: 60,
  serverActions: 500,
  deliveryEvents: 17,
  deliveryBytes: 5_900,
  deliveryUpserts: 2,
  executionsPerRetry: 2,
  heldBytes: 900,
  reportBytes: 300,
  holdEvents: null,
  holdBaseEvents: 8,
  updateEvents: 5,
  signalEvents: 4,
  roundEvents: 6,
  eventBytes: 100,
  reportBatch: 180,
  duePage: 1_000,
  roundMs: 180_000,
  batchActions: 2,
};

export const DEFAULT_VOLUME_SCENARIO: Omit<VolumeScenario, 'rate'> = {
  downMs: 60_000,
  maxAgeMs: defaultPolicy('telemetry').maxAge,
  budget: DEFAULT_RETRY_BUDGET,
  workers: null,
  latencyMs: 50,
  endpointRate: null,
  endpointMaxInFlight: null,
  probeEveryMs: 1_000,
  costs: DEFAULT_VOLUME_COSTS,
};

/** Temporal's work and writes for the messages an outage left waiting, per waiting message. */
export interface PerMessage {
  workflowStarts: number;
  /** Of them, delivery workflows (one per message today; in the hold design only for messages that ended there). */
  deliveryStarts: number;
  updates: number;
  signals: number;
  queries: number;
  activityTasks: number;
  searchAttributeUpserts: number;
  /** Everything above that Temporal Cloud counts as an action. */
  actions: number;
  historyEvents: number;
  historyBytes: number;
}

export interface DesignFigures {
  /** Messages whose first attempt failed (the hold design's also those that came before a worker saw the recovery). */
  backlog: number;
  /** From the recovery to the last delivery; null: the backlog never drains. */
  drainSeconds: number | null;
  requestsWhileDown: number;
  expired: number;
  perMessage: PerMessage;
  /** Hold workflows (0 today). */
  holds: number;
  /** The cluster this needs: workers, and the server's peak actions and workflow starts per second, batches included. */
  workers: number;
  peakActionsPerSecond: number;
  peakStartsPerSecond: number;
}

/** A limit of the hold design at this rate: what it needs against what there is. */
export interface VolumeLimit {
  what: string;
  need: number;
  capacity: number;
  unit: string;
  /** What most of the need is. */
  detail: string;
}

export interface VolumeFigures {
  rate: number;
  downSeconds: number;
  today: DesignFigures;
  holds: DesignFigures;
  limits: VolumeLimit[];
  /** Where the hold design breaks next, in one sentence. */
  breaksNext: string;
}

/** Both designs at the scenario's rate, and where the hold design breaks next. */
export function outageAtVolume(scenario: VolumeScenario): VolumeFigures {
  const today = todayDesign(scenario);
  const { figures: holds, limits } = holdDesign(scenario);
  return {
    rate: scenario.rate,
    downSeconds: scenario.downMs / 1000,
    today,
    holds,
    limits,
    breaksNext: breaksNext(scenario.rate, holds, limits),
  };
}

/** A pace a backlog waits for: message i is sent no sooner than `at + i / per` seconds after the outage began. */
interface Pace {
  at: number;
  per: number;
}

/**
 * How many of a backlog that arrived at `rate` (message i at i / rate s) go out before they expire, each at the
 * latest of its paces, and when the last of them goes (s after the outage began; null when none does). The age at
 * sending is linear in i for each pace, so the messages within the max age are one run of them.
 */
export function sentInTime(
  backlog: number,
  rate: number,
  paces: readonly Pace[],
  maxAgeS: number | null,
): { sent: number; lastAt: number | null } {
  if (backlog <= 0) return { sent: 0, lastAt: 0 };
  let [lo, hi] = [0, backlog - 1];
  for (const { at, per } of paces) {
    if (!(per > 0)) return { sent: 0, lastAt: null };
    if (maxAgeS === null) continue;
    const slope = 1 / per - 1 / rate; // the age at sending grows by this per message
    if (slope > 0) hi = Math.min(hi, Math.floor((maxAgeS - at) / slope));
    else if (slope < 0) lo = Math.max(lo, Math.ceil((maxAgeS - at) / slope));
    else if (at > maxAgeS) return { sent: 0, lastAt: null };
  }
  if (hi < lo) return { sent: 0, lastAt: null };
  return { sent: hi - lo + 1, lastAt: Math.max(...paces.map((p) => p.at + hi / p.per)) };
}

/** Messages per batch: the batcher closes one at its size or after its linger. */
const batchSize = (rate: number) => Math.min(VOLUME_DESIGN.batchMessages, Math.max(1, Math.round((rate * VOLUME_DESIGN.lingerMs) / 1000)));

/** The batches' own actions and starts per second: the same in both designs, and part of what the cluster must run. */
function batchLoad(s: VolumeScenario): { actions: number; starts: number } {
  const starts = s.rate / batchSize(s.rate);
  return { actions: starts * s.costs.batchActions, starts };
}

/**
 * Retries while the endpoint is down, today: the budget's bound (its rate over the outage, and its burst), unless
 * the messages' own backoff (the telemetry policy's mean full-jitter waits, over the half of the outage a message
 * spends in it on average) lets out fewer.
 */
function retriesWhileDown(s: VolumeScenario, backlog: number): number {
  const { initial, multiplier, min, max } = defaultPolicy('telemetry');
  let [retries, window, elapsedMs] = [0, initial, Math.max(min, initial / 2)];
  while (elapsedMs <= s.downMs / 2) {
    retries += 1;
    window = Math.min(max, window * multiplier);
    elapsedMs += Math.max(min, window / 2);
  }
  return Math.min((s.budget.perSecond * s.downMs) / 1000 + s.budget.burst, backlog * retries);
}

/** Today: each message whose first attempt failed is a delivery workflow; after the recovery the budget paces its retry. */
function todayDesign(s: VolumeScenario): DesignFigures {
  const { rate, costs } = s;
  const downS = s.downMs / 1000;
  const backlog = Math.round(rate * downS);
  const workers = s.workers ?? Math.ceil(rate / Math.min(costs.workerRate, costs.deliveryRate));
  const handOver = workers * costs.deliveryRate;
  // a message waits for its workflow (the workers' pace) and for its reserved budget slot after the recovery
  const { sent, lastAt } = sentInTime(
    backlog,
    rate,
    [
      { at: downS, per: s.budget.perSecond },
      { at: 0, per: handOver },
    ],
    maxAge(s),
  );
  const expired = backlog - sent;
  const retries = retriesWhileDown(s, backlog);
  // an expired message's execution asked the budget and found no slot before its expiry
  const activityTasks = costs.executionsPerRetry * (sent + retries) + expired;
  const upserts = backlog * costs.deliveryUpserts;
  const per = (n: number) => (backlog ? n / backlog : 0);
  const batches = batchLoad(s);
  const startsWhileDown = Math.min(rate, handOver);
  return {
    backlog,
    drainSeconds: lastAt === null ? null : Math.max(0, lastAt - downS),
    requestsWhileDown: backlog + retries,
    expired,
    perMessage: {
      workflowStarts: per(backlog),
      deliveryStarts: per(backlog),
      updates: 0,
      signals: 0,
      queries: 0,
      activityTasks: per(activityTasks),
      searchAttributeUpserts: per(upserts),
      actions: per(backlog + upserts + activityTasks),
      historyEvents: backlog ? costs.deliveryEvents : 0,
      historyBytes: backlog ? costs.deliveryBytes : 0,
    },
    holds: 0,
    workers,
    // while down each failed message's start, its upserts and its first execution (which reserves its slot) come at once
    peakActionsPerSecond: batches.actions + startsWhileDown * (2 + costs.deliveryUpserts),
    peakStartsPerSecond: batches.starts + startsWhileDown,
  };
}

const maxAge = (s: VolumeScenario) => (s.maxAgeMs === null ? null : s.maxAgeMs / 1000);

/** The hold design's release after the recovery: the workers it needs, and how fast the backlog leaves. */
interface Release {
  workers: number;
  /** Held messages/s released once the windows are open (0 or less: never). */
  perSecond: number;
  /** Seconds after the recovery until the windows are open: the next probe, then slow start to the cap. */
  startsAfterS: number;
}

function releaseOf(s: VolumeScenario, backlog: number): Release {
  const { rate, costs } = s;
  const [downS, latencyS] = [s.downMs / 1000, s.latencyMs / 1000];
  // the next probe finds the recovery, then slow start doubles the window each round trip up to its cap
  const startsAfter = (cap: number) => s.probeEveryMs / 1000 + Math.ceil(Math.log2(Math.max(1, cap))) * latencyS;
  // enough workers to take the new messages and release the backlog within the outage's own length, each sending
  // at most the window's cap in flight
  const target = backlog / Math.max(latencyS, downS - startsAfter(VOLUME_DESIGN.windowCap));
  const perWorkerWindow = VOLUME_DESIGN.windowCap / latencyS;
  const workers = s.workers ?? Math.max(1, Math.ceil(Math.max((rate + target) / costs.workerRate, target / perWorkerWindow)));
  // the pacer's cap is the endpoint's max-in-flight shared by the workers, or its own
  const capPerWorker = Math.min(VOLUME_DESIGN.windowCap, s.endpointMaxInFlight === null ? Infinity : s.endpointMaxInFlight / workers);
  const endpointRate = Math.min(s.endpointRate ?? Infinity, s.endpointMaxInFlight === null ? Infinity : s.endpointMaxInFlight / latencyS);
  const perSecond = Math.min((workers * capPerWorker) / latencyS, workers * costs.workerRate - rate, endpointRate - rate);
  return { workers, perSecond, startsAfterS: startsAfter(capPerWorker) };
}

/** Holds of `capacity` messages for a backlog: how many are full, and what the last one holds (0: none). */
function holdsOf(backlog: number, capacity: number): { full: number; rest: number; holds: number } {
  const full = Math.floor(backlog / capacity);
  const rest = backlog - full * capacity;
  return { full, rest, holds: full + (rest ? 1 : 0) };
}

/** How many messages a hold takes: its count cap, or fewer when that many would pass its byte cap. */
export const holdCapacity = (heldBytes: number) =>
  Math.max(1, Math.min(VOLUME_DESIGN.holdMaxMessages, Math.floor(VOLUME_DESIGN.holdMaxBytes / heldBytes)));

/** The hold design: held messages wait in holds, handed in by one update per batch, released at the pacer's pace. */
function holdDesign(s: VolumeScenario): { figures: DesignFigures; limits: VolumeLimit[] } {
  const { rate, costs } = s;
  const [downS, probeS] = [s.downMs / 1000, s.probeEveryMs / 1000];
  // until a worker's probe gets through, new messages are held too
  const backlog = Math.round(rate * (downS + probeS));
  const release = releaseOf(s, backlog);
  const { workers } = release;
  const { sent, lastAt } = sentInTime(backlog, rate, [{ at: downS + release.startsAfterS, per: release.perSecond }], maxAge(s));
  const expired = backlog - sent;
  const drainSeconds = lastAt === null ? null : Math.max(0, lastAt - downS);
  const capacity = holdCapacity(costs.heldBytes);
  const { full, rest, holds } = holdsOf(backlog, capacity);
  // per hold: its messages' reports in signals, and its pages of `due` queries
  const perHold = (page: number) => full * Math.ceil(capacity / page) + Math.ceil(rest / page);
  // each worker: one probe per interval while down (its `due` query and its report), and the first attempts sent
  // before its own failures turned the pacer failing: those in flight, and the failures in a row
  const probes = workers * Math.floor(downS / probeS);
  const requestsWhileDown = workers * (VOLUME_DESIGN.failingAfter + VOLUME_DESIGN.batchInFlight) + probes;
  // a refused update (HOLD_FULL) and the rest of its batch's messages in the next generation, per generation passed
  const updates = Math.ceil(backlog / batchSize(rate)) + 2 * Math.max(0, holds - 1);
  const signals = perHold(costs.reportBatch) + probes;
  const queries = perHold(costs.duePage) + probes;
  // while down a hold's release activity is retried by the server once per probe interval, from the hold's start
  // (hold k's at k × capacity / rate) until a probe sees the recovery: an arithmetic series over the holds
  const heldFor = (downS + probeS) * holds - ((capacity / rate) * holds * (holds - 1)) / 2;
  const idleExecutions = Math.max(0, heldFor / probeS);
  const rounds = drainSeconds === null ? 0 : Math.max(1, Math.ceil((drainSeconds * 1000) / costs.roundMs));
  // a message that expires in a hold is handed over: a delivery that starts closed, a dead letter
  const activityTasks = idleExecutions + holds * rounds + expired;
  const starts = holds + expired;
  const holdEvents =
    costs.holdEvents === null
      ? holds * (costs.holdBaseEvents + rounds * costs.roundEvents) + updates * costs.updateEvents + signals * costs.signalEvents
      : backlog * costs.holdEvents;
  const holdBytes = backlog * (costs.heldBytes + costs.reportBytes) + holdEvents * costs.eventBytes;
  const per = (n: number) => (backlog ? n / backlog : 0);
  const batches = batchLoad(s);
  const holdStartsPerSecond = rate / capacity;
  const peak = holdPeak(s, { workers, holds, holdStartsPerSecond, releasePerSecond: release.perSecond });
  const figures: DesignFigures = {
    backlog,
    drainSeconds,
    requestsWhileDown,
    expired,
    perMessage: {
      workflowStarts: per(starts),
      deliveryStarts: per(expired),
      updates: per(updates),
      signals: per(signals),
      queries: per(queries),
      activityTasks: per(activityTasks),
      searchAttributeUpserts: 0,
      actions: per(starts + updates + signals + queries + activityTasks),
      historyEvents: per(holdEvents + expired * costs.deliveryEvents),
      historyBytes: per(holdBytes + expired * costs.deliveryBytes),
    },
    holds,
    workers,
    peakActionsPerSecond: peak.actions,
    peakStartsPerSecond: batches.starts + holdStartsPerSecond,
  };
  const limits = holdLimits(s, figures, {
    release,
    holdStartsPerSecond,
    batchStarts: batches.starts,
    holdEvents,
    capacity,
    peakDetail: peak.detail,
  });
  return { figures, limits };
}

/**
 * The hold design's peak actions/s, the larger of two moments, and what most of it is. While down: the batches,
 * their updates, each hold's start and the refused update that led to it, the idle release activities (each
 * hold's, retried once per probe interval), each probe's query and report. After the recovery: the batches, the
 * release's reports and queries, each hold's release activity starting its round within a probe interval.
 */
function holdPeak(
  s: VolumeScenario,
  o: { workers: number; holds: number; holdStartsPerSecond: number; releasePerSecond: number },
): { actions: number; detail: string } {
  const probeS = s.probeEveryMs / 1000;
  const batches = batchLoad(s);
  const holdsPerProbe = (what: string): [string, number] => [`${formatCount(o.holds)} holds' release activities ${what}`, o.holds / probeS];
  const moments: [string, [string, number][]][] = [
    [
      'while down',
      [
        ['batches', batches.actions],
        ["batches' updates", batches.starts],
        ['hold starts', o.holdStartsPerSecond * 2],
        holdsPerProbe(`retried every ${formatCount(probeS)} s`),
        ['probes', (2 * o.workers) / probeS],
      ],
    ],
    [
      'after the recovery',
      [
        ['batches', batches.actions],
        ["the release's reports and queries", Math.max(0, o.releasePerSecond) * (1 / s.costs.reportBatch + 1 / s.costs.duePage)],
        holdsPerProbe(`starting their rounds within ${formatCount(probeS)} s`),
      ],
    ],
  ];
  const totals = moments.map(([when, parts]) => ({ when, parts, actions: sum(parts, ([, n]) => n) }));
  const top = totals.reduce((a, b) => (b.actions > a.actions ? b : a));
  const [what, n] = top.parts.reduce((a, b) => (b[1] > a[1] ? b : a));
  return { actions: top.actions, detail: `${top.when}; most of it ${what}: ${formatCount(n)}/s` };
}

function sum<T>(items: readonly T[], value: (item: T, index: number) => number): number {
  return items.reduce((n, item, i) => n + value(item, i), 0);
}

/** What the hold design needs at this rate against what there is, each with what most of the need is. */
function holdLimits(
  s: VolumeScenario,
  f: DesignFigures,
  o: { release: Release; holdStartsPerSecond: number; batchStarts: number; holdEvents: number; capacity: number; peakDetail: string },
): VolumeLimit[] {
  const n = formatCount;
  const perHoldBytes = o.capacity * (s.costs.heldBytes + s.costs.reportBytes) + (o.holdEvents / Math.max(1, f.holds)) * s.costs.eventBytes;
  const limits: VolumeLimit[] = [
    {
      what: "the server's action rate",
      need: f.peakActionsPerSecond,
      capacity: s.costs.serverActions,
      unit: 'actions/s',
      detail: o.peakDetail,
    },
    {
      what: 'workflow starts',
      need: f.peakStartsPerSecond,
      capacity: s.costs.serverStarts,
      unit: 'starts/s',
      detail: `batches ${n(o.batchStarts)}/s, holds ${n(o.holdStartsPerSecond)}/s: one per ${n(o.capacity)} messages`,
    },
    {
      what: "a hold's history",
      need: perHoldBytes,
      capacity: VOLUME_DESIGN.historyMaxBytes,
      unit: 'bytes',
      detail: `${n(o.capacity)} messages of ${n(s.costs.heldBytes)} B and their reports`,
    },
  ];
  // sized workers drain within the outage's length by construction: the drain is a limit when they cannot
  const drain = f.drainSeconds ?? Infinity;
  if (s.workers !== null || drain > s.downMs / 1000)
    limits.push({
      what: "the drain (target: the outage's length)",
      need: drain,
      capacity: s.downMs / 1000,
      unit: 's',
      detail: `${n(f.workers)} workers releasing ${n(Math.max(0, o.release.perSecond))} messages/s`,
    });
  const endpoint = Math.min(
    s.endpointRate ?? Infinity,
    s.endpointMaxInFlight === null ? Infinity : (s.endpointMaxInFlight * 1000) / s.latencyMs,
  );
  if (endpoint < Infinity)
    limits.push({
      what: 'the endpoint',
      need: s.rate + Math.max(0, o.release.perSecond),
      capacity: endpoint,
      unit: 'requests/s',
      detail: `${n(s.rate)}/s new messages and the release`,
    });
  return limits.sort((a, b) => b.need / b.capacity - a.need / a.capacity || 0);
}

/** "At 10,000 msg/s the hold design breaks first at …, then …; next: …" or "… nothing breaks; the nearest limit is …". */
function breaksNext(rate: number, f: DesignFigures, limits: readonly VolumeLimit[]): string {
  const share = (l: VolumeLimit) => l.need / l.capacity;
  const words = (l: VolumeLimit) => {
    const amount = (x: number) =>
      l.unit === 'bytes' ? formatBytes(x) : l.unit === 's' ? formatDuration(x * 1000) : `${formatCount(x)} ${l.unit}`;
    if (l.need === Infinity) return `${l.what}, never (${l.detail})`;
    const ratio =
      share(l) < 1
        ? `${Math.floor(share(l) * 100)} % of ${amount(l.capacity)}`
        : share(l) < 1.005
          ? `all the ${amount(l.capacity)} there is`
          : `${formatCount(share(l))}× the ${amount(l.capacity)} there is`;
    return `${l.what}, ${amount(l.need)}: ${ratio} (${l.detail})`;
  };
  const broken = limits.filter((l) => share(l) >= 1);
  const next = limits.find((l) => share(l) < 1);
  const lost = f.expired ? ` and ${formatCount(f.expired)} messages expire` : '';
  const at = `At ${formatCount(rate)} msg/s`;
  if (!broken.length) return `${at} nothing breaks${lost}; the nearest limit is ${next ? words(next) : 'none'}.`;
  const rest = next ? `; next: ${words(next)}` : '';
  return `${at} the hold design breaks first at ${broken.map(words).join('; then ')}${lost}${rest}.`;
}

/** 1,234 / 12.3 / 0.0012: three significant figures below 1,000, whole numbers above. */
export function formatCount(x: number): string {
  if (!Number.isFinite(x)) return x > 0 ? '∞' : '-';
  if (Math.abs(x) >= 1000 || Number.isInteger(x)) return Math.round(x).toLocaleString('en-US');
  return String(Number(x.toPrecision(3)));
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${formatCount(bytes / (1024 * 1024))} MiB`;
  if (bytes >= 1024) return `${formatCount(bytes / 1024)} KiB`;
  return `${formatCount(bytes)} B`;
}
