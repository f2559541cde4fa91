/**
 * `npm run bench [-- --quick] [-- --only throughput,cost,timers,storm,parked,volume,cluster,api,bridge,ordering,deadline,outage,peers]`: the benchmarks of
 * bench/README.md on a local dev server with file persistence. Writes bench/results/results.json,
 * results.md and plots (bench/results/quick/ for --quick); sections not run this time are kept from the
 * previous results.json. Not part of `npm test`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { startFlakyEndpoint } from '../src/demo/flaky-endpoint';
import { TEMPORAL_CLI_VERSION } from '../src/dev/temporal-cli';
import { PALETTE, renderFigure, writePlot } from '../src/plot';
import { installRuntime } from '../src/worker';
import { apiThroughput, type ApiRow } from './api';
import { bridgeThroughput, type BridgeRow } from './bridge';
import { clusterComparison, type ClusterBenchRow } from './cluster';
import { deadlineStorm, type DeadlineRow } from './deadline';
import { round, startBenchServer, BENCH_SQLITE_PRAGMAS } from './harness';
import { orderingThroughput, type OrderingRow } from './ordering';
import { outage, type OutageResults, type OutageRow } from './outage';
import { parkedCapacity, type ParkedRow } from './parked';
import { peers, peersReport, type PeersResults } from './peers';
import { retryCost, type RetryCostRow } from './retry-cost';
import { retryStorm, type StormRow } from './retry-storm';
import { throughput, type ThroughputRow } from './throughput';
import { timerPrecision, type TimerPrecisionRow } from './timer-precision';
import { SINK_LOAD_CONNECTIONS, volume, type FindabilityResults, type VolumeResults, type VolumeRow } from './volume';
import type { LatencyRow } from './redeliver-volume';

const SIZES = {
  full: {
    throughput: [1_000, 10_000],
    timers: [1, 100, 1_000],
    timerWindowMs: 30_000,
    storm: { deliveries: 1_000, downMs: 120_000 },
    parked: [1_000, 10_000, 20_000, 40_000, 80_000],
    parkedBudgetMs: 8 * 60_000,
    volume: {
      messages: [20_000],
      single: 1_000,
      memory: 100_000,
      latency: { perSecond: [250, 500, 1_000], seconds: 20, warmUpSeconds: 5 },
    },
    api: { messages: 20_000, batchSize: 500, connections: 4 },
    bridge: 20_000,
    ordering: 1_000,
    deadline: { rate: 50, telemetry: 2_000, events: 200, commands: 100, deadlineMs: 10_000 },
    outage: { perSecond: 500, seconds: 120, downFrom: 10, downUntil: 70 },
    cluster: {
      single: 1_000,
      batch: 5_000,
      timers: 1_000,
      timerWindowMs: 30_000,
      parked: [1_000, 5_000, 10_000],
      parkedBudgetMs: 4 * 60_000,
    },
    peers: { messages: 20_000, outage: { perSecond: 500, seconds: 120, downFrom: 10, downUntil: 70 } },
  },
  quick: {
    throughput: [200, 1_000],
    timers: [1, 50, 200],
    timerWindowMs: 10_000,
    storm: { deliveries: 100, downMs: 20_000 },
    parked: [500, 2_000],
    parkedBudgetMs: 60_000,
    volume: { messages: [3_000], single: 300, memory: 0, latency: { perSecond: [500, 1_000], seconds: 10, warmUpSeconds: 5 } },
    api: { messages: 3_000, batchSize: 500, connections: 4 },
    bridge: 3_000,
    ordering: 200,
    deadline: { rate: 25, telemetry: 400, events: 40, commands: 20, deadlineMs: 6_000 },
    // before outage holds, a backlog drains at the retry budget's 10/s: 1,500 messages take minutes
    outage: { perSecond: 100, seconds: 30, downFrom: 5, downUntil: 20 },
    cluster: { single: 200, batch: 1_000, timers: 200, timerWindowMs: 10_000, parked: [500, 1_000], parkedBudgetMs: 60_000 },
    peers: { messages: 3_000, outage: { perSecond: 100, seconds: 30, downFrom: 5, downUntil: 20 } },
  },
};

interface Results {
  mode: 'full' | 'quick';
  date: string;
  machine: { cpus: number; memoryGb: number; node: string; temporalCli: string; sqlitePragmas: string[] };
  throughput?: ThroughputRow[];
  retryCost?: RetryCostRow[];
  timerPrecision?: TimerPrecisionRow[];
  retryStorm?: StormRow[];
  parked?: ParkedRow[];
  volume?: VolumeResults;
  /** The same work on a Temporal cluster on PostgreSQL beside the dev server (bench/cluster.ts). */
  cluster?: ClusterBenchRow[];
  /** Messages accepted a second over the HTTP API, beside the client API (bench/api.ts). */
  api?: ApiRow[];
  /** Messages a second through the MQTT bridge, beside the client API and the publisher alone (bench/bridge.ts). */
  bridge?: BridgeRow[];
  /** Messages a second ordered on one key, on 100 keys, and unordered (bench/ordering.ts). */
  ordering?: OrderingRow[];
  /** A mixed storm to a rate-limited endpoint, with and without deadline-first (bench/deadline.ts). */
  deadline?: DeadlineRow[];
  /** A steady stream of telemetry through the batcher to an endpoint down for a while, against BullMQ (bench/outage.ts). */
  outage?: OutageResults;
  /** redeliver on the cluster's PostgreSQL against pg-boss on the same PostgreSQL, BullMQ, the sink alone; the outage on both (bench/peers.ts). */
  peers?: PeersResults;
  /** When each section was measured: a run with `--only` keeps the other sections of the previous results. */
  measured?: Partial<Record<SectionKey, string>>;
}

/** `--only` names → their keys in Results. */
const SECTIONS = {
  throughput: 'throughput',
  cost: 'retryCost',
  timers: 'timerPrecision',
  storm: 'retryStorm',
  parked: 'parked',
  volume: 'volume',
  cluster: 'cluster',
  api: 'api',
  bridge: 'bridge',
  ordering: 'ordering',
  deadline: 'deadline',
  outage: 'outage',
  peers: 'peers',
} as const;
type SectionKey = (typeof SECTIONS)[keyof typeof SECTIONS];

async function main(): Promise<void> {
  const mode = process.argv.includes('--quick') ? 'quick' : 'full';
  const onlyArg = process.argv.find((a) => a.startsWith('--only='))?.slice(7) ?? process.argv[process.argv.indexOf('--only') + 1];
  const only = process.argv.some((a) => a.startsWith('--only')) && onlyArg ? onlyArg.split(',') : Object.keys(SECTIONS);
  const unknown = only.filter((name) => !(name in SECTIONS));
  if (unknown.length > 0) throw new Error(`--only: unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(SECTIONS).join(', ')}`);
  const ran = only.map((name) => SECTIONS[name as keyof typeof SECTIONS]);
  const sizes = SIZES[mode];
  const outDir = path.join(__dirname, '..', '..', 'bench', 'results', ...(mode === 'quick' ? ['quick'] : []));
  mkdirSync(outDir, { recursive: true });
  installRuntime();

  const results: Results = {
    mode,
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      memoryGb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      temporalCli: TEMPORAL_CLI_VERSION,
      sqlitePragmas: BENCH_SQLITE_PRAGMAS,
    },
  };
  keepPrevious(results, path.join(outDir, 'results.json'), ran);
  // written after each benchmark, so that a later failure loses nothing measured
  const save = () => {
    for (const key of ran) if (results[key]) (results.measured ??= {})[key] = results.date;
    writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  };
  const bench = await startBenchServer(7390);
  const sink = await startFlakyEndpoint();
  try {
    if (only.includes('throughput')) {
      console.log('throughput ...');
      results.throughput = await throughput(bench, sink, sizes.throughput);
      save();
      sink.received.length = 0;
    }
    if (only.includes('cost')) {
      console.log('cost per retry ...');
      results.retryCost = await retryCost(bench, sink);
      save();
    }
    if (only.includes('timers')) {
      console.log('timer precision ...');
      results.timerPrecision = await timerPrecision(bench, sink, sizes.timers, sizes.timerWindowMs);
      save();
      sink.received.length = 0;
    }
    if (only.includes('storm')) {
      console.log('retry storm ...');
      results.retryStorm = await retryStorm(bench, sink, sizes.storm.deliveries, sizes.storm.downMs);
      save();
      sink.received.length = 0;
    }
    if (only.includes('parked')) {
      console.log('parked capacity ...');
      results.parked = await parkedCapacity(bench, sink, sizes.parked, sizes.parkedBudgetMs);
      save();
    }
    if (only.includes('volume')) {
      console.log('volume ...');
      results.volume = await volume(bench, sink, sizes.volume);
      save();
      sink.received.length = 0;
    }
    if (only.includes('api')) {
      console.log('HTTP API ...');
      results.api = await apiThroughput(bench, sink, sizes.api);
      save();
    }
    if (only.includes('bridge')) {
      console.log('MQTT bridge ...');
      results.bridge = await bridgeThroughput(bench, sink, sizes.bridge);
      save();
    }
    if (only.includes('ordering')) {
      console.log('ordering keys ...');
      results.ordering = await orderingThroughput(bench, sink, sizes.ordering);
      save();
      sink.received.length = 0;
    }
    if (only.includes('deadline')) {
      console.log('deadline-first ...');
      results.deadline = await deadlineStorm(bench, sink, sizes.deadline);
      save();
      sink.received.length = 0;
    }
    if (only.includes('outage')) {
      console.log('outage ...');
      results.outage = await outage(bench, sink, sizes.outage);
      save();
      sink.received.length = 0;
    }
    if (only.includes('cluster')) {
      console.log('cluster beside the dev server ...');
      results.cluster = await clusterComparison(bench, sink, sizes.cluster);
      save();
      sink.received.length = 0;
    }
    if (only.includes('peers')) {
      console.log('durable peers: redeliver and pg-boss on one PostgreSQL ...');
      results.peers = await peers(sink, sizes.peers);
      save();
      sink.received.length = 0;
    }
  } finally {
    await sink.close();
    await bench.stop();
  }
  save();
  const markdown = report(results);
  writeFileSync(path.join(outDir, 'results.md'), markdown);
  // a kept section's plot is already there
  if (results.retryStorm && ran.includes('retryStorm')) await writePlots(results.retryStorm, outDir);
  console.log(`\n${markdown}`);
}

/** The sections this run does not measure stay as the previous run of the same mode left them. */
function keepPrevious(results: Results, file: string, ran: SectionKey[]): void {
  if (!existsSync(file)) return;
  const previous = JSON.parse(readFileSync(file, 'utf8')) as Results;
  const kept = results as unknown as Record<SectionKey, unknown>;
  for (const key of Object.values(SECTIONS)) {
    if (ran.includes(key) || previous[key] === undefined) continue;
    kept[key] = previous[key];
    (results.measured ??= {})[key] = previous.measured?.[key] ?? previous.date;
  }
}

function table(header: string[], rows: (string | number)[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
const x = (a: number, b: number) => (b === 0 ? '—' : `${(a / b).toFixed(2)}×`);

export function report(r: Results): string {
  const parts = [
    `# Benchmark results (${r.mode})`,
    '',
    `${r.date} · ${r.machine.cpus} cores, ${r.machine.memoryGb} GiB · Node ${r.machine.node} · Temporal CLI ${r.machine.temporalCli} dev server, SQLite file with ${r.machine.sqlitePragmas.join(', ')} · worker in its own process. Ratios compare figures measured in this same run.`,
  ];
  const earlier = Object.entries(r.measured ?? {}).filter(([, date]) => date !== r.date);
  if (earlier.length > 0)
    parts.push(
      '',
      `Kept from earlier runs (not rerun this time; each section's ratios are from its own run): ${earlier.map(([key, date]) => `${key} (${date})`).join(', ')}.`,
    );
  if (r.throughput) {
    parts.push('', '## 1. Throughput: first-attempt success to a local sink', '');
    const baseline = (n: number) => r.throughput!.find((t) => t.deliveries === n && t.system === 'baseline')!;
    const order = ['redeliver-standalone', 'redeliver', 'baseline'];
    const rows = [...r.throughput].sort((a, b) => a.deliveries - b.deliveries || order.indexOf(a.system) - order.indexOf(b.system));
    parts.push(
      table(
        [
          'deliveries',
          'system',
          '/s',
          'vs baseline',
          'worker CPU ms / delivery',
          'vs baseline',
          'server CPU ms / delivery',
          'vs baseline',
          'worker peak RSS MB',
          'events / delivery',
          'workflow tasks / delivery',
          'workflows / delivery',
        ],
        rows.map((a) => {
          const b = baseline(a.deliveries);
          return [
            a.deliveries,
            a.system,
            a.perSecond,
            x(a.perSecond, b.perSecond),
            a.workerCpuMsPerDelivery,
            x(a.workerCpuMsPerDelivery, b.workerCpuMsPerDelivery),
            // results recorded before these were measured have none
            a.serverCpuMsPerDelivery ?? '—',
            a.serverCpuMsPerDelivery === undefined ? '—' : x(a.serverCpuMsPerDelivery, b.serverCpuMsPerDelivery),
            a.workerPeakRssMb,
            a.historyEventsPerDelivery ?? '—',
            a.workflowTasksPerDelivery ?? '—',
            a.workflowsPerDelivery ?? '—',
          ];
        }),
      ),
      '',
      "Every delivery is one `submit` (64 in flight) of a message its first attempt delivers. redeliver: a single submit as made by default, a delivery's workflow from the start. redeliver-standalone: the same submits with `REDELIVER_SINGLE_SUBMIT=standalone`, the first attempt a standalone activity (docs/batches.md, \"A single submit\"): delivered at once, no workflow is started, and the run ends when visibility counts every first attempt completed. Baseline: the simplest workflow calling one activity that makes the same POST. CPU: the worker process's, and the dev server's while each system ran (on this shared machine the rates follow whatever CPU the other sessions leave; the CPU per delivery is the steadier figure). Events and workflow tasks: per delivery, the mean over 10 histories spread across the run. The order of the systems rotates from one size to the next.",
    );
  }
  if (r.retryCost) {
    const native = r.retryCost.find((c) => c.system === 'native activity retry')!;
    parts.push('', '## 2. Cost per retry: a delivery that needs 10 attempts', '');
    parts.push(
      table(
        ['system', 'attempts', 'activity executions', 'history events', 'events per retry', 'vs native', 'round trips per attempt'],
        r.retryCost.map((c) => [
          c.system,
          c.attempts,
          c.activityExecutions,
          c.historyEvents,
          c.eventsPerRetry,
          x(c.historyEvents, native.historyEvents),
          c.roundTripsPerAttempt,
        ]),
      ),
      '',
      "Target: jitter and live visibility at no more than 3 history events per retry on average. redeliver's retries are Temporal's own activity retries of one `retryDelivery` activity, which adds no event per retry; its attempts are the delivery's result, and its activity executions are the first `sendAttempt` plus every execution of `retryDelivery`, those that only wait (for the planned time, or for the retry budget) included: usually one more than the attempts, none more when attempt 2 is due by the time `retryDelivery` first starts. Round trips: each workflow task and each activity execution is a poll and a response.",
    );
  }
  if (r.timerPrecision) {
    parts.push('', '## 3. Timer precision: lateness of each retry against its planned time', '');
    parts.push(
      table(
        [
          'waiting at once',
          'activity start − planned p50 ms',
          'p99 ms',
          'max ms',
          'retry at endpoint − planned p50 ms',
          'p99 ms',
          'max ms',
        ],
        r.timerPrecision.map((t) => [t.waiting, t.timerP50Ms, t.timerP99Ms, t.timerMaxMs, t.retryP50Ms, t.retryP99Ms, t.retryMaxMs]),
      ),
      '',
      "Each delivery fails once and waits for attempt 2 as a Temporal activity retry: the `retryDelivery` activity's first execution fails with `nextRetryDelay` until the planned time (`progress.nextAttemptAt` of its input), the next one sends. Activity start: when the server started that execution (its ActivityTaskStarted event). Retry at endpoint: when attempt 2 reached the endpoint. The worker runs without the per-endpoint retry budget: the largest size wakes ~33 deliveries/s to one endpoint, which the default budget (10/s) would hold back on purpose; this measures the timing, not the budget. Target: p99 under 1 s.",
    );
  }
  if (r.retryStorm) {
    const none = r.retryStorm.find((s) => s.jitter === 'none' && s.budget === 'off')!;
    const budgetOnly = (s: StormRow) =>
      r.retryStorm!.find((b) => b.jitter === s.jitter && b.budget === 'on' && (b.breaker ?? 'off') === 'off');
    parts.push(
      '',
      `## 4. Retry storm: ${r.retryStorm[0]!.deliveries} deliveries per run, endpoint down ${r.retryStorm[0]!.downSeconds} s, then up`,
      '',
    );
    parts.push(
      table(
        [
          'jitter',
          'retry budget',
          'breaker',
          'requests while down',
          'vs budget alone',
          'peak req/s while down',
          'peak req/s after recovery',
          'vs none, budget off',
          's until all delivered',
        ],
        r.retryStorm.map((s) => [
          s.jitter,
          s.budget,
          s.breaker ?? 'off',
          s.requestsWhileDown,
          s.breaker === 'on' ? x(s.requestsWhileDown, budgetOnly(s)?.requestsWhileDown ?? NaN) : '',
          s.peakPerSecondWhileDown,
          s.peakPerSecondAfterRecovery,
          x(s.peakPerSecondAfterRecovery, none.peakPerSecondAfterRecovery),
          s.secondsUntilAllDelivered,
        ]),
      ),
      '',
      "Each run in turn, on a fresh worker: every delivery starts at the same instant (a common start delay), the endpoint answers 503 until it recovers, then 202; the default policy otherwise (initial 200 ms, max 300 s, min 200 ms). Every jitter strategy runs without the per-endpoint retry budget, then `full` and `none` with the default budget (10 retries/s, burst 20; each run has one worker on a task queue of its own, so that worker has the whole budget). The budget bounds the retries while the endpoint is down to 10/s after the burst (first attempts are not held back), and a held-back retry waits for a reserved slot: after recovery the backlog drains at 10/s, so the peak after recovery is bounded, and the drain takes about (deliveries still waiting) ÷ 10 s — longer than without the budget once that exceeds the wait the backoff alone would leave. With the circuit breaker (on by default; off in the other rows) the endpoint, once judged failing, gets one probe a second instead of the budget's 10 retries a second; the deliveries it held look again at most every 30 s, so they drain within that after the first probe that gets through, at the budget's pace. Plot: retry-storm.svg / .png (dashed: budget on).",
    );
  }
  if (r.parked) {
    parts.push('', '## 5. Parked capacity: deliveries waiting at once', '');
    parts.push(
      table(
        ['waiting', 'worker RSS MB', 'dev server RSS MB', 'fill rate /s'],
        r.parked.map((p) => [p.parked, p.workerRssMb, p.serverRssMb, p.fillPerSecond]),
      ),
    );
  }
  // results from before redeliver joined the section were a bare list of rows
  if (r.volume && !Array.isArray(r.volume)) parts.push(...volumeReport(r.volume));
  if (r.cluster) parts.push(...clusterReport(r.cluster));
  if (r.api) parts.push(...apiReport(r.api));
  if (r.bridge) parts.push(...bridgeReport(r.bridge));
  if (r.ordering) parts.push(...orderingReport(r.ordering));
  if (r.deadline) parts.push(...deadlineReport(r.deadline));
  if (r.outage) parts.push(...outageReport(r.outage));
  if (r.peers) parts.push(...peersReport(r.peers));
  return `${parts.join('\n')}\n`;
}

function outageReport({ scenario: s, harness, healthy, redeliver: r, bullmq: b }: OutageResults): string[] {
  const ideal = r.backlog / healthy.perSecond;
  // a run that timed out says so: its figures are what had arrived by then
  const delivered = (row: OutageRow) => (row.complete ? row.delivered : `${row.delivered} (timed out)`);
  const undelivered = (row: OutageRow) => Object.values(row.ended).reduce((sum, n) => sum + n, 0);
  const cells = (what: string, a: number | string | null, c: number | string | null, ratio = true) => [
    what,
    a ?? '—',
    c ?? '—',
    ratio && typeof a === 'number' && typeof c === 'number' ? x(c, a) : '',
  ];
  const w = r.workflows;
  const waiting = (w.dispositions['handed-over'] ?? 0) + (w.dispositions.held ?? 0);
  const per = (n: number, d: number) => (d > 0 ? round(n / d, 3) : '—');
  const title = `${s.perSecond} telemetry messages/s for ${s.seconds} s, endpoint down from ${s.downFrom} s to ${s.downUntil} s`;
  return [
    '',
    `## 10. Outage: ${title}`,
    '',
    table(
      ['figure', 'redeliver', 'BullMQ', 'BullMQ ÷ redeliver'],
      [
        cells('offered (achieved /s)', `${r.offered} (${r.offeredPerSecond}/s)`, `${b.offered} (${b.offeredPerSecond}/s)`),
        cells('delivered (distinct Message-Ids with a 2xx)', delivered(r), delivered(b), false),
        cells('ended undelivered', `${undelivered(r)} (${endedWords(r.ended)})`, `${undelivered(b)} (${endedWords(b.ended)})`),
        cells('duplicates (a 2xx again)', r.duplicates, b.duplicates, false),
        cells('backlog at recovery', r.backlog, b.backlog, false),
        cells('drain after recovery s', r.drainSeconds, b.drainSeconds),
        cells(
          'drain ÷ ideal (backlog ÷ healthy batch rate; target ≤ 2×)',
          x(r.drainSeconds ?? NaN, ideal),
          x(b.drainSeconds ?? NaN, b.backlog / healthy.perSecond),
        ),
        cells('requests while down (503s)', r.requestsWhileDown, b.requestsWhileDown),
        cells('requests per message offered', round(r.requests / r.offered, 2), round(b.requests / b.offered, 2)),
        cells('worker peak RSS MB', r.workerPeakRssMb, b.workerPeakRssMb),
        cells('server peak RSS MB (dev server / redis-server)', r.serverPeakRssMb, b.serverPeakRssMb),
      ],
    ),
    '',
    `Healthy batch rate (redeliver, the same producer path, ${healthy.messages} messages handed to the batcher at once, endpoint always 202): ${healthy.perSecond}/s, so the ideal drain of redeliver's backlog of ${r.backlog} is ${round(ideal, 1)} s. Harness alone, ${harness.messages} messages: the sink took ${harness.sinkPerSecond}/s from a plain client (${x(harness.sinkPerSecond, healthy.perSecond)} the healthy batch rate${harness.sinkCpuMsPerPost ? `; ${harness.sinkCpuMsPerPost} ms CPU per POST` : ''}), the producer offered ${harness.producerPerSecond}/s to a batcher that starts nothing (${x(harness.producerPerSecond, s.perSecond)} the scenario's rate).`,
    '',
    `redeliver's workflows: ${w.batches} batches${w.batchesNotCompleted ? ` (${w.batchesNotCompleted} not completed, not counted)` : ''} (rows: ${endedWords(w.dispositions)}); ${waiting} messages left their batch undelivered (handed over or held; by code: ${endedWords(w.notDeliveredCodes ?? {})}), the rest of the backlog of ${r.backlog} waited in its batch's activity and was delivered by it. Workflow starts while the endpoint was down, deliveries and holds: ${per(w.deliveries.startedWhileDown + w.holds.startedWhileDown, r.backlog)} per message of the backlog. Delivery workflows: ${w.deliveries.runs} runs, ${w.deliveries.startedWhileDown} started while the endpoint was down (${per(w.deliveries.startedWhileDown, waiting)} per message that left its batch), ${w.deliveries.historyEvents} history events (${per(w.deliveries.historyEvents, w.dispositions['handed-over'] ?? 0)} per message handed over). Holds: ${w.holds.runs} runs, ${w.holds.startedWhileDown} started while down, ${w.holds.historyEvents} history events (${per(w.holds.historyEvents, w.dispositions.held ?? 0)} per held message), ${w.holds.handIns} hand-ins (update \`hold\`), ${w.holds.releaseRounds} release rounds, ${w.holds.releasedSignals} reports (signal \`released\`): ${per(w.holds.historyEvents, w.holds.heldTimesRounds)} events per held message per release round of its hold (target ≤ 0.1).`,
    '',
    "A producer in its own process offers telemetry (QoS 1, default policy) at a steady rate through `Redeliver.batcher()` (defaults: batches of up to 500, 100 ms linger), as a gateway would, to one path of the sink, which answers 503 while it is down and 202 otherwise; one worker process, the retry budget and breaker on as by default (bench/outage.ts). Backlog: messages submitted before the recovery that the sink had not accepted by then; drain: from the recovery until the sink accepted the last of them, while the producer goes on offering new messages. Ended undelivered: redeliver's dead letters by state (the client's listing); BullMQ's failed jobs. BullMQ: the producer adds each message with `Queue.add` to a fresh redis-server (section 6's), job options as section 6's with a jittered backoff (`{ type: 'exponential', delay: 200, jitter: 0.5 }`) and 20 attempts, so that no job runs out of attempts during the outage; worker as section 6's (concurrency 50). Workflow figures: from visibility after the run (every run of deliveryWorkflow and holdWorkflow on the task queue, batch results by row); a release round is an execution of the hold's release activity.",
  ];
}

/** `{ expired: 3, rejected: 0 }` → `expired 3, rejected 0`. */
const endedWords = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([what, n]) => `${what} ${n}`)
    .join(', ') || 'none';

function deadlineReport(rows: DeadlineRow[]): string[] {
  const first = rows[0]!;
  const fifo = rows.find((r) => r.priority === 'fifo');
  const title = `${first.telemetry} telemetry, ${first.events} events, ${first.commands} command responses (deadline ${first.deadlineSeconds} s) at ${first.rate}/s`;
  const parts = ['', `## Deadline-first: ${title}`, ''];
  parts.push(
    table(
      [
        'priority',
        'command responses before deadline',
        'vs fifo',
        'expired',
        'submit → endpoint p50 s',
        'max s',
        'telemetry delivered',
        'events delivered',
        's to drain',
        'vs fifo',
      ],
      rows.map((r) => [
        r.priority,
        `${(r.commandsMetDeadline * 100).toFixed(1)} %`,
        fifo ? x(r.commandsMetDeadline, fifo.commandsMetDeadline) : '—',
        r.commandsExpired,
        r.commandP50Seconds ?? '—',
        r.commandMaxSeconds ?? '—',
        `${r.telemetryDelivered} / ${r.telemetry}`,
        `${r.eventsDelivered} / ${r.events}`,
        r.secondsToDrain,
        fifo ? x(r.secondsToDrain, fifo.secondsToDrain) : '—',
      ]),
    ),
    '',
    "One endpoint (the sink) limited in rate, one worker process and task queue per row (bench/deadline.ts): the telemetry (QoS 1) is submitted first, then the events, then the command responses, each with its deadline from its own submit, so the telemetry has reserved the endpoint's slots for longer than the deadline before the first command response comes. Before deadline: arrived at the sink before it. With `fifo` a command response whose slot falls after its deadline ends `expired` at once, unsent. Drain: from the first submit until every delivery had ended.",
  );
  return parts;
}

function orderingReport(rows: OrderingRow[]): string[] {
  const unordered = rows.find((r) => r.system === 'unordered')!;
  const parts = ['', `## Ordering keys: ${unordered.messages} messages, ordered on one key, on 100 keys, and unordered`, ''];
  parts.push(
    table(
      [
        'system',
        'messages /s',
        'vs unordered',
        'worker CPU ms / message',
        'server CPU ms / message',
        'delivery events',
        'sequencer events / message',
        's',
      ],
      rows.map((r) => [
        r.system,
        r.perSecond,
        x(r.perSecond, unordered.perSecond),
        r.workerCpuMsPerMessage,
        r.serverCpuMsPerMessage,
        r.deliveryEventsPerMessage,
        r.sequencerEventsPerMessage,
        r.seconds,
      ]),
    ),
    '',
    "Every message succeeds at once to the sink of section 6; each one a `submit` (64 in flight, taken in order, so each key's submit order is the order given), each system on a fresh worker process of its own (bench/ordering.ts). Messages /s: from the first submit until the last delivery closed. Delivery events: one delivery's history, the mean of 10 spread across the run; sequencer events: every run of the keys' sequencers (docs/ordering.md), per message. One key is one delivery at a time: its rate is the hand-over's (a few workflow tasks and the attempt), whatever the worker's slots.",
  );
  return parts;
}

function bridgeReport(rows: BridgeRow[]): string[] {
  const client = rows.find((r) => r.system === 'client-submitBatch')!;
  const cell = (v: number | undefined) => v ?? '—';
  return [
    '',
    '## 9. The MQTT bridge: messages a second from a broker to the sink',
    '',
    table(
      [
        'system',
        'messages',
        'delivered /s',
        'vs client API',
        'accepted /s',
        'vs client API',
        'bridge CPU ms / message',
        'worker CPU ms / message',
        'batches',
      ],
      rows.map((r) => [
        r.system,
        r.messages,
        r.perSecond,
        x(r.perSecond, client.perSecond),
        r.acceptedPerSecond,
        x(r.acceptedPerSecond, client.acceptedPerSecond),
        cell(r.bridgeCpuMsPerMessage),
        cell(r.workerCpuMsPerMessage),
        cell(r.batches),
      ]),
    ),
    '',
    "The same telemetry messages (one tenant, 100 devices, the id in the `message-id` user property) end to end to the sink of section 6, a worker in its own process. bridge: `redeliver bridge` in its own process (src/bridge, defaults: batches of up to 500 lingering 100 ms, 4,000 messages in flight), the messages published at QoS 1 to Mosquitto 500 at a time by the benchmark's process while it runs (the publisher sets the pace); accepted: until the bridge had acknowledged the last one to the broker, its batch durably started. bridge-backlog: the same messages published while the bridge was away (its session keeps them), then the bridge started, from its connect: its own pace, as after an outage. publisher-alone: the same publishing to a plain MQTT subscriber that acknowledges each message at once; delivered: until the subscriber had them all, accepted: until the broker had acknowledged every publish. client-submitBatch: `Redeliver.submitBatch` of every message at once (section 6's batch row); accepted: until it returned.",
  ];
}

function apiReport(rows: ApiRow[]): string[] {
  const client = rows.find((r) => r.system === 'client-api')!;
  const cell = (v: number | null) => (v === null ? '—' : v);
  return [
    '',
    '## 8. The HTTP API: messages accepted a second, in batches',
    '',
    table(
      [
        'system',
        'messages',
        'accepted /s',
        'vs client API',
        'producer CPU ms / message',
        'API server CPU ms / message',
        'dev server CPU ms / message',
      ],
      rows.map((r) => [
        r.system,
        r.messages,
        r.perSecond,
        x(r.perSecond, client.perSecond),
        r.producerCpuMsPerMessage,
        cell(r.apiCpuMsPerMessage),
        cell(r.serverCpuMsPerMessage),
      ]),
    ),
    '',
    "Accepted: durably started, no worker polling (the batches wait; delivering is measured in section 6). client-api: `Redeliver.submitBatch` of every message at once in batches of 500, from the benchmark's process. http-api: `redeliver serve` in its own process, JSON arrays of 500 delivery inputs POSTed with an API key by a load generator in its own process (undici, 4 requests in flight); each answer is 202 once its batch is started. load-alone: the same generator sending the same requests to the sink, which reads each body and answers 202 without parsing it: what the generator alone can send.",
  ];
}

function clusterReport(rows: ClusterBenchRow[]): string[] {
  const [dev, cluster] = [rows.find((r) => r.server === 'dev server')!, rows.find((r) => r.server === 'cluster')!];
  const perCore = (v: ClusterBenchRow['single']) => Math.round(1000 / (v.workerCpuMsPerMessage + (v.serverCpuMsPerMessage ?? 0)));
  const parked = (r: ClusterBenchRow) => r.parked[r.parked.length - 1]!;
  const line = (what: string, a: number, b: number) => [what, a, b, x(b, a)];
  const parts = ['', '## 7. A Temporal cluster on PostgreSQL beside the dev server', ''];
  parts.push(
    table(
      ['figure', 'dev server', 'cluster', 'cluster ÷ dev server'],
      [
        line(`single deliveries /s (${dev.single.messages})`, dev.single.perSecond, cluster.single.perSecond),
        line('  worker CPU ms / delivery', dev.single.workerCpuMsPerMessage, cluster.single.workerCpuMsPerMessage),
        line('  server CPU ms / delivery', dev.single.serverCpuMsPerMessage ?? NaN, cluster.single.serverCpuMsPerMessage ?? NaN),
        line('  deliveries per core-second (worker + server CPU)', perCore(dev.single), perCore(cluster.single)),
        line(`batched messages /s (${dev.batch.messages}, batches of 500)`, dev.batch.perSecond, cluster.batch.perSecond),
        line('  worker CPU ms / message', dev.batch.workerCpuMsPerMessage, cluster.batch.workerCpuMsPerMessage),
        line('  server CPU ms / message', dev.batch.serverCpuMsPerMessage ?? NaN, cluster.batch.serverCpuMsPerMessage ?? NaN),
        line('  messages per core-second (worker + server CPU)', perCore(dev.batch), perCore(cluster.batch)),
        line(`timers, ${dev.timers.waiting} waiting: activity start − planned p99 ms`, dev.timers.timerP99Ms, cluster.timers.timerP99Ms),
        line('  retry at endpoint − planned p50 ms', dev.timers.retryP50Ms, cluster.timers.retryP50Ms),
        line('  retry at endpoint − planned p99 ms', dev.timers.retryP99Ms, cluster.timers.retryP99Ms),
        line('parked: deliveries waiting (largest level reached)', parked(dev).parked, parked(cluster).parked),
        line('  server RSS MB there', parked(dev).serverRssMb, parked(cluster).serverRssMb),
        line('  fill rate /s there', parked(dev).fillPerSecond, parked(cluster).fillPerSecond),
      ],
    ),
    '',
    `The cluster: \`redeliver cluster up\` (Temporal Server 1.32.0 built from source, deploy/temporal/config.yaml, 512 shards): frontend, two history hosts, matching and worker, each a process, on PostgreSQL from Debian's packages, on the same 2 cores as everything else. Its server CPU is every Temporal service's and PostgreSQL's (each connection's process included); per delivery of the single run: ${Object.entries(
      cluster.cpuByService ?? {},
    )
      .map(([name, ms]) => `${name} ${ms} ms`)
      .join(
        ', ',
      )}. During the timer run, history's own figures (means): a due timer task waited ${cluster.timerTaskQueueMs} ms in its queue, a persistence request took ${cluster.persistenceMs} ms. Per core-second: 1,000 ÷ (worker + server CPU ms per delivery), the rate one core would sustain if nothing else ran.`,
  );
  return parts;
}

function volumeReport({ rows, latency, streamed, findability }: VolumeResults): string[] {
  const parts = ['', '## 6. Volume: messages that succeed at once, end to end, against BullMQ', ''];
  const sizes = [...new Set(rows.map((v) => v.messages))];
  const cell = (v: number | undefined) => (v === undefined ? '—' : v);
  parts.push(
    table(
      [
        'messages',
        'system',
        'messages /s',
        'vs BullMQ',
        'worker CPU ms / message',
        'vs BullMQ',
        'worker peak RSS MB',
        'server CPU ms / message',
        'history events / message',
        's',
      ],
      sizes.flatMap((n) => {
        const bull = rows.find((v) => v.messages === n && v.system === 'bullmq');
        return rows
          .filter((v) => v.messages === n)
          .map((v) => [
            n,
            v.system,
            v.perSecond,
            bull ? x(v.perSecond, bull.perSecond) : '—',
            v.workerCpuMsPerMessage,
            bull ? x(v.workerCpuMsPerMessage, bull.workerCpuMsPerMessage) : '—',
            v.workerPeakRssMb,
            cell(v.serverCpuMsPerMessage),
            cell(v.eventsPerMessage),
            v.seconds,
          ]);
      }),
    ),
    '',
    `Each system delivers every message to the same local sink (src/demo/flaky-endpoint.ts, HTTP 202) with one POST each; messages/s from the first submit or add until the sink has answered every message with a 2xx. BullMQ: a fresh redis-server (append-only file on, fsync every second, no RDB snapshots), jobs added with addBulk in chunks of 1,000, job options \`attempts: 10, backoff: { type: 'exponential', delay: 200 }, removeOnComplete: true\`, one Worker with concurrency 50 in its own process POSTing with undici (keep-alive); server CPU is redis-server's. sink-alone: the same POSTs from a plain undici Pool with ${SINK_LOAD_CONNECTIONS} keep-alive connections in a process of its own, no queue: its worker columns are the load generator's.`,
  );
  parts.push('', ...redeliverLines(rows, latency, streamed));
  if (findability) parts.push('', ...findabilityLines(findability));
  for (const alone of rows.filter((v) => v.system === 'sink-alone')) {
    const best = Math.max(...rows.filter((v) => v.messages === alone.messages && v.system !== 'sink-alone').map((v) => v.perSecond));
    if (!(best > 0)) continue;
    const oneCore = alone.sinkCpuMsPerMessage ? Math.round(1000 / alone.sinkCpuMsPerMessage) : undefined;
    parts.push(
      '',
      `Sink alone, ${alone.messages} POSTs: ${alone.perSecond}/s, ${x(alone.perSecond, best)} the fastest system's rate${oneCore ? `; the sink spent ${alone.sinkCpuMsPerMessage} ms CPU per POST (about ${oneCore}/s if it had a core to itself)` : ''}.`,
    );
  }
  return parts;
}

/** The issue's targets, as ratios of this run: batches against one workflow per message and against BullMQ, latency, memory. */
function redeliverLines(rows: VolumeRow[], latencies: VolumeResults['latency'], streamed?: VolumeResults['streamed']): string[] {
  const single = rows.find((v) => v.system === 'redeliver-single');
  const batches = rows.filter((v) => v.system === 'redeliver-batch');
  const lines: string[] = [];
  for (const b of batches) {
    const bull = rows.find((v) => v.messages === b.messages && v.system === 'bullmq');
    const vs = [
      single && `${x(b.perSecond, single.perSecond)} redeliver's one workflow per message (${single.perSecond}/s)`,
      bull && `${x(b.perSecond, bull.perSecond)} BullMQ`,
    ];
    lines.push(
      `- Batches, ${b.messages} messages: ${b.perSecond}/s, ${vs.filter(Boolean).join(', ')}; ${b.eventsPerMessage} history events per message; worker peak RSS ${b.workerPeakRssMb} MB.`,
    );
  }
  lines.push(
    // a run recorded before several rates were measured holds one
    ...[latencies]
      .flat()
      .map(
        (l) =>
          `- Latency through the batcher (a producer in its own process offering ${l.offeredPerSecond} messages/s one at a time for ${l.messages / l.offeredPerSecond} s, default batcher): submit → arrival at the sink p50 ${l.p50Ms} ms, p99 ${l.p99Ms} ms, max ${l.maxMs} ms; ${l.deliveredPerSecond}/s reached the sink, in ${l.batches} batches; CPU per message: producer ${l.producerCpuMsPerMessage} ms, worker ${l.workerCpuMsPerMessage} ms, dev server ${l.serverCpuMsPerMessage} ms.${warmUpWords(l)}`,
      ),
  );
  if (streamed)
    lines.push(
      `- Memory while ${streamed.messages} messages pass through the batcher at ${streamed.offeredPerSecond}/s: worker RSS after each tenth of the run ${streamed.workerRssMb.join(', ')} MB, peak ${streamed.workerPeakRssMb} MB (p99 ${streamed.p99Ms} ms with no warm-up, the fresh worker's first seconds in it; ${streamed.deliveredPerSecond}/s reached the sink).`,
    );
  return lines;
}

/** Issue 29's ratio: the batch rate with the message index against without it, pooled over the alternating runs. */
function findabilityLines({ indexed, unindexed }: FindabilityResults): string[] {
  const pooled = (runs: VolumeRow[]) => round(runs.reduce((n, r) => n + r.messages, 0) / runs.reduce((s, r) => s + r.seconds, 0), 1);
  const mean = (runs: VolumeRow[], f: (r: VolumeRow) => number | undefined) =>
    round(runs.reduce((n, r) => n + (f(r) ?? 0), 0) / runs.length, 3);
  const lookups = indexed.map((r) => r.lookup);
  return [
    `- Findability by id (docs/batches.md, "Finding a message by its id"), ${indexed[0]!.messages} messages a run, ${indexed.length} runs each in alternating order (without, with, with, without, …): batches with their message index ${pooled(indexed)}/s (runs ${indexed.map((r) => r.perSecond).join(', ')}), **${x(pooled(indexed), pooled(unindexed))}** the same batches without it, ${pooled(unindexed)}/s (runs ${unindexed.map((r) => r.perSecond).join(', ')}); target ≥ 0.9×. Worker CPU ${mean(indexed, (r) => r.workerCpuMsPerMessage)} against ${mean(unindexed, (r) => r.workerCpuMsPerMessage)} ms per message, dev server ${mean(indexed, (r) => r.serverCpuMsPerMessage)} against ${mean(unindexed, (r) => r.serverCpuMsPerMessage)} ms. The index adds ${lookups[0]!.indexBytesPerMessage} bytes per message to the batches' start requests, and no request, history event or workflow. ${lookups[0]!.lookups} messages looked up by id after each indexed run, one at a time (\`status()\`: no delivery of its own, its batch found by the index, its row read): p50 ${lookups.map((l) => l.p50Ms).join(', ')} ms, max ${lookups.map((l) => l.maxMs).join(', ')} ms.`,
  ];
}

/** A latency row's warm-up, measured apart: the fresh worker's and producer's first seconds at the same rate. */
const warmUpWords = (l: LatencyRow) =>
  l.warmUp
    ? ` Measured after ${l.warmUp.seconds} s at the same rate on the fresh worker and producer; those first seconds, apart: p50 ${l.warmUp.p50Ms} ms, p99 ${l.warmUp.p99Ms} ms, max ${l.warmUp.maxMs} ms.`
    : '';

export async function writePlots(storm: StormRow[], outDir: string): Promise<void> {
  const jitters = [...new Set(storm.map((s) => s.jitter))];
  const name = (s: StormRow) => `${s.jitter} jitter, budget ${s.budget}${s.breaker === 'on' ? ', breaker' : ''}`;
  // the legend is one row (src/plot, ~7.2 px a character at 13 px, 58 px of swatch and gap an item): widen the panel to fit it
  const legendWidth = storm.reduce((w, s) => w + 58 + name(s).length * 7.2, 0);
  const svg = renderFigure({
    title: 'Retry storm: requests per second at the endpoint',
    subtitle: [
      `${storm[0]!.deliveries} deliveries per run; the endpoint answers 503 for the first ${storm[0]!.downSeconds} s, then 202. Every delivery starts at 0 s.`,
    ],
    panels: [
      {
        x: { label: 'seconds since every delivery started', includeZero: true },
        y: { label: 'requests per second', includeZero: true },
        // one colour per jitter strategy; the budget's runs dashed
        lines: storm.map((s) => ({
          name: name(s),
          color: PALETTE[jitters.indexOf(s.jitter) % PALETTE.length]!,
          dashed: s.budget === 'on',
          points: s.perSecond.map((v, t) => [t, v] as [number, number]),
        })),
      },
    ],
    notes: [
      'Without jitter, every delivery retries in the same instants; with jitter the same work spreads out and the endpoint sees a lower peak when it comes back.',
      'The retry budget (10 retries/s per endpoint, burst 20) bounds the retries while the endpoint is down; after it recovers the backlog drains at 10/s: a bounded peak, and a drain of about (deliveries still waiting) ÷ 10 s.',
    ],
    panelWidth: Math.max(900, Math.ceil(legendWidth)),
    panelHeight: 420,
  });
  await writePlot(path.join(outDir, 'retry-storm.svg'), svg);
  await writePlot(path.join(outDir, 'retry-storm.png'), svg);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
