import type { Command } from 'commander';
import { InvalidInputError, type Problem } from '../errors';
import { DURATION_TICKS, PALETTE, plotFormat, renderFigure, writePlot, type LineSeries } from '../plot';
import { formatDuration, parseDuration, policyProblems } from '../policy';
import { runExperiment, STRATEGIES, type Strategy, type StrategyResult } from '../simulate';
import { withConnectionFlags } from './connection';
import { wholeNumber } from './number-flags';
import { simulateOutage, type OutageFlags } from './simulate-outage';
import { DEFAULT_VOLUME_SCENARIO as VOLUME } from '../simulate/outage-volume';
import { simulateVolume, volumeOptions, VOLUME_ONLY, type VolumeFlags } from './simulate-volume';
import { emit } from './output';

interface SimulateFlags {
  clients: string;
  runs: string;
  strategy: string;
  base: string;
  cap: string;
  min: string;
  seed: string;
  json?: boolean;
  plot?: string;
}

const NAMES: Record<Strategy, string> = {
  'no-backoff': 'no backoff',
  exponential: 'exponential, no jitter',
  full: 'full jitter',
  equal: 'equal jitter',
  decorrelated: 'decorrelated jitter',
};

const COLORS: Record<Strategy, string> = {
  'no-backoff': PALETTE[6],
  exponential: PALETTE[1],
  full: PALETTE[0],
  equal: PALETTE[4],
  decorrelated: PALETTE[2],
};

/** What `simulate` runs: Brooker's experiment, a replay of a recorded outage, or the model of an outage at volume. */
type Mode = 'experiment' | 'replay' | 'volume';

/** The runs a flag is for; a flag not listed is for all (--json). */
const MODES_OF: Record<string, readonly Mode[]> = {
  ...Object.fromEntries(['clients', 'runs', 'strategy', 'base', 'cap'].map((f) => [f, ['experiment']])),
  ...Object.fromEntries(
    ['fromEndpoint', 'fromFile', 'since', 'jitter', 'initial', 'multiplier', 'max', 'maxAttempts'].map((f) => [f, ['replay']]),
  ),
  ...Object.fromEntries(['min', 'seed', 'plot'].map((f) => [f, ['experiment', 'replay']])),
  ...Object.fromEntries(['maxAge', 'budget', 'budgetBurst'].map((f) => [f, ['replay', 'volume']])),
  ...Object.fromEntries(VOLUME_ONLY.map((f) => [f, ['volume']])),
};
const FOR: Record<Mode, string> = {
  experiment: "Brooker's experiment",
  replay: 'a replay (--from-endpoint, --from-file)',
  volume: '--outage-at-volume',
};

export function registerSimulate(program: Command): void {
  const command = withConnectionFlags(program.command('simulate'));
  command
    .description(
      'rerun the experiment of Brooker\'s "Exponential Backoff And Jitter": N clients racing to write one row; or replay a recorded outage under another policy (--from-endpoint, --from-file); or model an outage at volume, today\'s design against the outage holds (--outage-at-volume)',
    )
    .option('--clients <n>', 'clients contending for the row (1-1000)', '100')
    .option('--runs <n>', 'runs averaged per strategy (1-10000)', '100')
    .option('--strategy <s>', `${STRATEGIES.join(' | ')} | all`, 'all')
    .option('--base <duration>', "the article's base: the first window is twice this", '5ms')
    .option('--cap <duration>', 'cap of the backoff window', '2s')
    .option('--min <duration>', "floor after jitter, as a policy's min (the article has none)", '0')
    .option('--seed <n>', 'seed of the draws: the same seed gives the same numbers', '1')
    .option('--json', 'print one object per strategy: strategy, clients, runs, calls, completionMs (means over the runs)')
    .option(
      '--plot <file>',
      'also draw calls and completion time per strategy against 10 client counts up to --clients (a replay: requests per second, recorded and replayed), to FILE.svg or FILE.png',
    )
    .option('--from-endpoint <host:port>', "replay this endpoint's recorded outages (docs/outage-replay.md)")
    .option('--from-file <file>', 'replay a recorded outage from a file (redeliver endpoint export); - for stdin')
    .option('--since <time>', 'with --from-endpoint: from this time, ISO date or a duration ago such as 7d (default: all that is kept)')
    .option('--jitter <strategy>', 'replay: full | equal | decorrelated | none (default as recorded)')
    .option('--initial <duration>', 'replay: first backoff window')
    .option('--multiplier <n>', 'replay: window growth per attempt')
    .option('--max <duration>', 'replay: cap of the window')
    .option('--max-attempts <n>', 'replay: attempts in all, 0 = unlimited')
    .option(
      '--max-age <duration>',
      `replay, volume: expire this long after the first attempt, or "none" (volume: default ${formatDuration(VOLUME.maxAgeMs ?? 0)})`,
    )
    .option(
      '--budget <rate>',
      `replay, volume: the retry budget, off or retries per second such as 10/s (default as recorded; volume: ${VOLUME.budget.perSecond}/s)`,
    )
    .option('--budget-burst <n>', 'replay, volume: retries the budget lets out at once on top of the rate (default as recorded, else 20)');
  for (const [flags, description] of volumeOptions()) command.option(flags, description);
  command
    .addHelpText(
      'after',
      `
Each client reads the row's version and writes with it; the write fails if another client wrote first,
and the client backs off, then reads again. Time is virtual (a discrete-event simulation): one-way network
delays are |N(10 ms, 2 ms)|. calls = writes the server received; completion = time until every client
had succeeded.

Examples:
  $ redeliver simulate --clients 100 --runs 100 --strategy all --json
  $ redeliver simulate --clients 50 --strategy full --cap 1s
  $ redeliver simulate --plot docs/simulate.svg

A recorded outage, replayed under a candidate policy and retry budget (the policy flags change every
recorded kind's policy; --min is the policy's floor here), beside what happened:
  $ redeliver simulate --from-endpoint ingest.example.com --since 7d --budget 20/s --json
  $ redeliver endpoint export ingest.example.com --since 7d > outage.json
  $ redeliver simulate --from-file outage.json --jitter none --plot replay.svg

A 60 s outage at 1,000, 10,000 and 100,000 messages/s, today's design against the outage holds, in
arithmetic fed with the costs measured on this machine (each one a flag):
  $ redeliver simulate --outage-at-volume
  $ redeliver simulate --outage-at-volume --rate 5000 --down 5m --worker-rate 2500 --json`,
    )
    .action(async (flags: SimulateFlags & OutageFlags & VolumeFlags & { outageAtVolume?: boolean }, command: Command) => {
      const typed = (field: string) => command.getOptionValueSource(field) === 'cli';
      const replay = flags.fromEndpoint !== undefined || flags.fromFile !== undefined;
      const mode: Mode = flags.outageAtVolume ? 'volume' : replay ? 'replay' : 'experiment';
      const misplaced = Object.keys(MODES_OF).filter((f) => typed(f) && !MODES_OF[f]!.includes(mode));
      if (misplaced.length) {
        throw new InvalidInputError(
          misplaced.map((f) => ({
            field: `--${f.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
            message: `is for ${MODES_OF[f]!.map((m) => FOR[m]).join(' or ')}`,
          })),
          'flags',
        );
      }
      if (mode === 'volume') return simulateVolume(flags);
      if (replay) return simulateOutage(flags, typed);
      const { clients, runs, strategies, baseMs, capMs, minMs, seed } = parseFlags(flags);
      const run = (n: number) => runExperiment({ clients: n, runs, strategies, baseMs, capMs, minMs, seed });
      const results = run(clients);
      emit(!!flags.json, results, () => simulateText(results, { baseMs, capMs, minMs }));
      if (flags.plot) {
        const sweep = clientCounts(clients).map(run);
        await writePlot(flags.plot, simulateFigure(sweep, strategies, { runs, baseMs, capMs, minMs, seed }));
      }
    });
}

function parseFlags(flags: SimulateFlags) {
  const problems: Problem[] = [];
  const clients = wholeNumber(problems, '--clients', flags.clients, 1, 1000);
  const runs = wholeNumber(problems, '--runs', flags.runs, 1, 10_000);
  const seed = wholeNumber(problems, '--seed', flags.seed, 0, 2 ** 32 - 1);
  const strategies = flags.strategy === 'all' ? STRATEGIES : STRATEGIES.filter((s) => s === flags.strategy);
  if (strategies.length === 0) {
    problems.push({ field: '--strategy', message: `must be one of ${STRATEGIES.join(', ')}, all; got ${JSON.stringify(flags.strategy)}` });
  }
  if (flags.plot !== undefined && !plotFormat(flags.plot)) {
    problems.push({ field: '--plot', message: `must name a .svg or .png file, got ${JSON.stringify(flags.plot)}` });
  }
  // base and cap are a policy's initial and max: the policy's own rules judge them
  const flagOf: Record<string, string> = { initial: '--base', max: '--cap', min: '--min' };
  for (const p of policyProblems({ initial: flags.base, max: flags.cap, min: flags.min }, {})) {
    problems.push({ field: flagOf[p.field] ?? p.field, message: p.message.replace('exceed max', 'exceed --cap') });
  }
  if (problems.length > 0) throw new InvalidInputError(problems, 'flags');
  const ms = (value: string) => parseDuration(value)!;
  return { clients, runs, seed, strategies, baseMs: ms(flags.base), capMs: ms(flags.cap), minMs: ms(flags.min) };
}

/** Ten evenly spaced client counts up to `clients` (every count when fewer than ten). */
function clientCounts(clients: number): number[] {
  if (clients < 10) return Array.from({ length: clients }, (_, i) => i + 1);
  return [...new Set(Array.from({ length: 10 }, (_, i) => Math.round((clients * (i + 1)) / 10)))];
}

interface Scale {
  baseMs: number;
  capMs: number;
  minMs: number;
}

/** "base 5 ms, cap 2 s" (and the floor, when there is one). */
const scaleOf = (o: Scale) =>
  `base ${formatDuration(o.baseMs)}, cap ${formatDuration(o.capMs)}${o.minMs ? `, min ${formatDuration(o.minMs)}` : ''}`;

function simulateText(results: StrategyResult[], scale: Scale): string[] {
  const first = results[0]!;
  const least = Math.min(...results.map((r) => r.calls));
  const rows = results.map(
    (r) =>
      `${NAMES[r.strategy].padEnd(24)}${Math.round(r.calls).toLocaleString('en-US').padStart(10)}${`×${(r.calls / least).toFixed(2)}`.padStart(9)}${formatDuration(r.completionMs).padStart(12)}`,
  );
  return [
    `${first.clients} clients, mean of ${first.runs} runs; ${scaleOf(scale)}`,
    '',
    `${'strategy'.padEnd(24)}${'calls'.padStart(10)}${'vs least'.padStart(9)}${'completion'.padStart(12)}`,
    ...rows,
  ];
}

function simulateFigure(sweep: StrategyResult[][], strategies: readonly Strategy[], o: Scale & { runs: number; seed: number }): string {
  const series = (value: (r: StrategyResult) => number): LineSeries[] =>
    strategies.map((s) => ({
      name: NAMES[s],
      color: COLORS[s],
      dashed: s === 'no-backoff' || s === 'exponential',
      points: sweep.map((results) => {
        const r = results.find((x) => x.strategy === s)!;
        return [r.clients, value(r)];
      }),
    }));
  const clients = { label: 'clients contending for the row', includeZero: true };
  return renderFigure({
    title: 'Clients racing to write one row: the work and the time each backoff strategy takes',
    subtitle: [
      'Each client writes the row once, with optimistic concurrency: a client whose write loses backs off, reads the row again and retries.',
      `Reproduces Marc Brooker, "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015): ${scaleOf(o)}, network |N(10 ms, 2 ms)| each way; mean of ${o.runs} runs per point.`,
      readOf(sweep[sweep.length - 1]!),
    ],
    panels: [
      {
        title: 'Work: write calls the server handled',
        x: clients,
        y: { label: 'calls (log scale)', scale: 'log' },
        lines: series((r) => r.calls),
      },
      {
        title: 'Time until every client had succeeded',
        x: clients,
        y: { label: 'completion time (log scale)', scale: 'log', ticks: DURATION_TICKS, format: formatDuration },
        lines: series((r) => r.completionMs),
      },
    ],
    notes: [
      "Lower is better in both panels. Dashed: no jitter. The backed-off strategies run redeliver's own backoff engine (src/policy).",
      'The simulated server never slows down under load; a real one would, which punishes the extra calls of retrying without backoff.',
      `Virtual time, seeded draws (seed ${o.seed}): the picture repeats exactly.`,
    ],
  });
}

/** The extremes at the largest client count, in words: what the reader should take from the picture. */
function readOf(results: StrategyResult[]): string {
  const by = (key: 'calls' | 'completionMs') => [...results].sort((a, b) => a[key] - b[key]);
  const [fewest, most] = [by('calls')[0]!, by('calls').at(-1)!];
  const [quickest, slowest] = [by('completionMs')[0]!, by('completionMs').at(-1)!];
  const calls = (r: StrategyResult) => `${NAMES[r.strategy]} (${Math.round(r.calls).toLocaleString('en-US')})`;
  const time = (r: StrategyResult) => `${NAMES[r.strategy]} (${formatDuration(r.completionMs)})`;
  return `At ${results[0]!.clients} clients: fewest calls, ${calls(fewest)}; most, ${calls(most)}. Quickest, ${time(quickest)}; slowest, ${time(slowest)}.`;
}
