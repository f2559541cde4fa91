/**
 * `npm run bench [-- --quick] [-- --only throughput,cost,timers,storm,parked]`: the benchmarks of
 * bench/README.md on a local dev server with file persistence. Writes bench/results/results.json,
 * results.md and plots (bench/results/quick/ for --quick). Not part of `npm test`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { startFlakyEndpoint } from '../src/demo/flaky-endpoint';
import { TEMPORAL_CLI_VERSION } from '../src/dev/temporal-cli';
import { PALETTE, renderFigure, writePlot } from '../src/plot';
import { installRuntime } from '../src/worker';
import { startBenchServer, BENCH_SQLITE_PRAGMAS } from './harness';
import { parkedCapacity, type ParkedRow } from './parked';
import { retryCost, type RetryCostRow } from './retry-cost';
import { retryStorm, type StormRow } from './retry-storm';
import { throughput, type ThroughputRow } from './throughput';
import { timerPrecision, type TimerPrecisionRow } from './timer-precision';

const SIZES = {
  full: {
    throughput: [1_000, 10_000],
    timers: [1, 100, 1_000],
    timerWindowMs: 30_000,
    storm: { deliveries: 1_000, downMs: 120_000 },
    parked: [1_000, 10_000, 20_000, 40_000, 80_000],
    parkedBudgetMs: 8 * 60_000,
  },
  quick: {
    throughput: [200, 1_000],
    timers: [1, 50, 200],
    timerWindowMs: 10_000,
    storm: { deliveries: 100, downMs: 20_000 },
    parked: [500, 2_000],
    parkedBudgetMs: 60_000,
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
}

async function main(): Promise<void> {
  const mode = process.argv.includes('--quick') ? 'quick' : 'full';
  const onlyArg = process.argv.find((a) => a.startsWith('--only='))?.slice(7) ?? process.argv[process.argv.indexOf('--only') + 1];
  const only =
    process.argv.some((a) => a.startsWith('--only')) && onlyArg ? onlyArg.split(',') : ['throughput', 'cost', 'timers', 'storm', 'parked'];
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
  // written after each benchmark, so that a later failure loses nothing measured
  const save = () => writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
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
  } finally {
    await sink.close();
    await bench.stop();
  }
  writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const markdown = report(results);
  writeFileSync(path.join(outDir, 'results.md'), markdown);
  if (results.retryStorm) await writePlots(results.retryStorm, outDir);
  console.log(`\n${markdown}`);
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
  if (r.throughput) {
    parts.push('', '## 1. Throughput: first-attempt success to a local sink', '');
    const sizes = [...new Set(r.throughput.map((t) => t.deliveries))];
    parts.push(
      table(
        [
          'deliveries',
          'redeliver /s',
          'baseline /s',
          'ratio',
          'redeliver CPU ms / delivery',
          'baseline CPU ms / delivery',
          'ratio',
          'redeliver peak RSS MB',
          'baseline peak RSS MB',
        ],
        sizes.map((n) => {
          const a = r.throughput!.find((t) => t.deliveries === n && t.system === 'redeliver')!;
          const b = r.throughput!.find((t) => t.deliveries === n && t.system === 'baseline')!;
          return [
            n,
            a.perSecond,
            b.perSecond,
            x(a.perSecond, b.perSecond),
            a.workerCpuMsPerDelivery,
            b.workerCpuMsPerDelivery,
            x(a.workerCpuMsPerDelivery, b.workerCpuMsPerDelivery),
            a.workerPeakRssMb,
            b.workerPeakRssMb,
          ];
        }),
      ),
      '',
      'Baseline: the simplest workflow calling one activity that makes the same POST.',
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
          'requests while down',
          'peak req/s while down',
          'peak req/s after recovery',
          'vs none, budget off',
          's until all delivered',
        ],
        r.retryStorm.map((s) => [
          s.jitter,
          s.budget,
          s.requestsWhileDown,
          s.peakPerSecondWhileDown,
          s.peakPerSecondAfterRecovery,
          x(s.peakPerSecondAfterRecovery, none.peakPerSecondAfterRecovery),
          s.secondsUntilAllDelivered,
        ]),
      ),
      '',
      'Each run in turn, on a fresh worker: every delivery starts at the same instant (a common start delay), the endpoint answers 503 until it recovers, then 202; the default policy otherwise (initial 200 ms, max 300 s, min 200 ms). Every jitter strategy runs without the per-endpoint retry budget, then `full` and `none` with the default budget (10 retries/s, burst 20; each run has one worker on a task queue of its own, so that worker has the whole budget). The budget bounds the retries while the endpoint is down to 10/s after the burst (first attempts are not held back), and a held-back retry waits for a reserved slot: after recovery the backlog drains at 10/s, so the peak after recovery is bounded, and the drain takes about (deliveries still waiting) ÷ 10 s — longer than without the budget once that exceeds the wait the backoff alone would leave. Plot: retry-storm.svg / .png (dashed: budget on).',
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
  return `${parts.join('\n')}\n`;
}

export async function writePlots(storm: StormRow[], outDir: string): Promise<void> {
  const jitters = [...new Set(storm.map((s) => s.jitter))];
  const name = (s: StormRow) => `${s.jitter} jitter, budget ${s.budget}`;
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
