import type { Command } from 'commander';
import { InvalidInputError, type Problem } from '../errors';
import {
  MESSAGE_KINDS,
  attemptTimeline,
  describePolicy,
  formatDuration,
  parseDuration,
  policyProblems,
  previewSchedule,
  seededRandom,
  validatePolicy,
  type BackoffPolicy,
  type BackoffPolicyInput,
  type MessageKind,
  type SchedulePreview,
} from '../policy';
import { DURATION_TICKS, PALETTE, plotFormat, renderFigure, writePlot, type Rule } from '../plot';
import { wholeNumber } from './number-flags';
import { emit } from './output';

interface ScheduleFlags {
  kind: string;
  qos?: string;
  jitter?: string;
  initial?: string;
  multiplier?: string;
  min?: string;
  max?: string;
  maxAttempts?: string;
  maxAge?: string;
  deadline?: string;
  attempts: string;
  draws: string;
  seed: string;
  attemptTime: string;
  json?: boolean;
  plot?: string;
}

/** The guide's reconnection window: three attempts within it count as reconnecting, not downtime. */
const RECONNECT_WINDOW_MS = 3 * 60_000;
const MAX_OFFSETS = 20_000_000;

export function registerSchedule(program: Command): void {
  program
    .command('schedule')
    .description('preview when the attempts of a failing delivery happen under a backoff policy (needs no server)')
    .option('--kind <kind>', `whose defaults fill in the policy: ${MESSAGE_KINDS.join(' | ')}`, 'event')
    .option('--qos <0|1>', 'telemetry only (default 1)')
    .option('--jitter <strategy>', 'full | equal | decorrelated | none (default full)')
    .option('--initial <duration>', 'first backoff window (default 200ms)')
    .option('--multiplier <n>', 'window growth per attempt (default 2)')
    .option('--min <duration>', 'least wait between attempts (default 200ms)')
    .option('--max <duration>', 'cap of the window (default 300s)')
    .option('--max-attempts <n>', 'attempts in all, 0 = unlimited (default 0)')
    .option('--max-age <duration>', 'expire this long after the first attempt, or "none" (default per kind: 1h, 7d, 5m)')
    .option('--deadline <time>', 'expire at this ISO 8601 time (default none)')
    .option('--attempts <n>', 'attempts to follow (1-1000)', '15')
    .option('--draws <n>', 'random draws of the whole schedule (1-1000000)', '10000')
    .option('--seed <n>', 'seed of the draws: the same seed gives the same numbers', '1')
    .option('--attempt-time <duration>', 'how long each failing attempt takes before its wait starts', '0')
    .option('--json', 'print JSON')
    .option('--plot <file>', 'also draw the schedule to FILE.svg or FILE.png')
    .addHelpText(
      'after',
      `
Durations are milliseconds or strings such as 200ms, 5m, 7 days. Offsets are times from the first
attempt: min, median and 95th percentile over the draws, and the latest any draw can give.

Examples:
  $ redeliver schedule --kind telemetry
  $ redeliver schedule --kind event --jitter decorrelated --max 1m --attempts 25 --plot schedule.svg
  $ redeliver schedule --kind command-response --attempt-time 10s --json`,
    )
    .action(async (flags: ScheduleFlags) => {
      const now = Date.now();
      const { kind, qos, input, attempts, draws, seed, attemptMs } = parseFlags(flags, now);
      const policy = validatePolicy(input, { kind, qos, now });
      const options = { attempts, attemptMs, startAt: now };
      const preview = previewSchedule(policy, seededRandom(seed), { ...options, draws });
      // every draw at the top of its range: each wait is non-decreasing in its draw, so no draw lands later
      const latest = attemptTimeline(policy, () => 1, options).offsets;
      const rows = preview.attempts.map((a, i) => ({ ...a, latestMs: latest[i] ?? null }));
      const report = { kind, qos, policy, draws, seed, attemptMs, attempts: rows, endings: preview.endings };
      emit(!!flags.json, report, () => scheduleText(kind, policy, preview, rows));
      if (flags.plot) await writePlot(flags.plot, scheduleFigure({ kind, qos, policy, preview, latest, attemptMs, startAt: now }));
    });
}

/** Flags → typed values and a policy input; every problem at once, each naming its flag. */
function parseFlags(flags: ScheduleFlags, now: number) {
  const problems: Problem[] = [];
  const kind = flags.kind as MessageKind;
  if (!MESSAGE_KINDS.includes(kind))
    problems.push({ field: '--kind', message: `must be one of ${MESSAGE_KINDS.join(', ')}, got ${JSON.stringify(flags.kind)}` });
  let qos: 0 | 1 = 1;
  if (flags.qos !== undefined) {
    if (flags.qos === '0' || flags.qos === '1') qos = Number(flags.qos) as 0 | 1;
    else problems.push({ field: '--qos', message: `must be 0 or 1, got ${JSON.stringify(flags.qos)}` });
    if (kind !== 'telemetry') problems.push({ field: '--qos', message: `applies to telemetry only, not ${kind}` });
  }
  const attempts = wholeNumber(problems, '--attempts', flags.attempts, 1, 1000);
  const draws = wholeNumber(problems, '--draws', flags.draws, 1, 1_000_000);
  const seed = wholeNumber(problems, '--seed', flags.seed, 0, 2 ** 32 - 1);
  // every offset is kept to find the percentiles: bound the memory that takes
  if (attempts * draws > MAX_OFFSETS)
    problems.push({
      field: '--draws',
      message: `times --attempts must stay within ${MAX_OFFSETS.toLocaleString('en-US')}, got ${draws} × ${attempts}`,
    });
  const attemptMs = parseDuration(flags.attemptTime);
  if (attemptMs === undefined || attemptMs < 0) {
    problems.push({
      field: '--attempt-time',
      message: `must be a duration of 0 or more, such as 10s, got ${JSON.stringify(flags.attemptTime)}`,
    });
  }
  if (flags.plot !== undefined && !plotFormat(flags.plot)) {
    problems.push({ field: '--plot', message: `must name a .svg or .png file, got ${JSON.stringify(flags.plot)}` });
  }
  const input = policyInputOf(flags);
  if (MESSAGE_KINDS.includes(kind)) {
    for (const p of policyProblems(input, { kind, qos, now }))
      problems.push({ field: flagOf(p.field), message: p.message.replace('exceed max', 'exceed --max') });
  }
  if (problems.length > 0) throw new InvalidInputError(problems, 'flags');
  return { kind, qos, input, attempts, draws, seed, attemptMs: attemptMs! };
}

/** The policy fields the flags set, values as typed so that validation quotes them back. */
function policyInputOf(flags: ScheduleFlags): BackoffPolicyInput {
  const numeric = (v: string | undefined) => (v !== undefined && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v);
  const input: Record<string, unknown> = {
    jitter: flags.jitter,
    initial: flags.initial,
    multiplier: numeric(flags.multiplier),
    min: flags.min,
    max: flags.max,
    maxAttempts: numeric(flags.maxAttempts),
    maxAge: flags.maxAge === 'none' ? null : flags.maxAge,
    deadline: flags.deadline,
  };
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as BackoffPolicyInput;
}

/** `maxAttempts` → `--max-attempts`. */
const flagOf = (field: string) => `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

type Row = SchedulePreview['attempts'][number] & { latestMs: number | null };

function scheduleText(kind: MessageKind, policy: BackoffPolicy, preview: SchedulePreview, rows: Row[]): string[] {
  const pad = (s: string, n: number) => s.padStart(n);
  const lines = [
    `${kind}: ${describePolicy(policy)}`,
    `time of each attempt after the first, over ${preview.draws.toLocaleString('en-US')} draws:`,
    '',
    `${'attempt'.padEnd(8)}${pad('min', 10)}${pad('median', 10)}${pad('p95', 10)}${pad('latest', 10)}  reached`,
    ...rows.map((r) =>
      [
        String(r.attempt).padEnd(8),
        pad(formatDuration(r.minMs), 10),
        pad(formatDuration(r.medianMs), 10),
        pad(formatDuration(r.p95Ms), 10),
        pad(r.latestMs === null ? '—' : formatDuration(r.latestMs), 10),
        `  ${share(r.draws, preview.draws)}`,
      ].join(''),
    ),
  ];
  const { expired, exhausted } = preview.endings;
  if (rows.some((r) => r.latestMs === null))
    lines.push('', 'latest: every draw at its maximum; — where that schedule has already expired.');
  if (expired) lines.push('', `${expired} of ${preview.draws} draws expired before attempt ${rows.length + 1}.`);
  if (exhausted) lines.push('', `${exhausted} of ${preview.draws} draws used all ${policy.maxAttempts} attempt(s).`);
  return lines;
}

interface ScheduleFigure {
  kind: MessageKind;
  qos: 0 | 1;
  policy: BackoffPolicy;
  preview: SchedulePreview;
  latest: number[];
  attemptMs: number;
  startAt: number;
}

function scheduleFigure({ kind, qos, policy, preview, latest, attemptMs, startAt }: ScheduleFigure): string {
  const retries = preview.attempts.filter((a) => a.attempt > 1);
  const dataMax = Math.max(1, ...latest);
  const rules: Rule[] = [];
  if (policy.maxAttempts !== 1) {
    const within = latest.filter((t) => t <= RECONNECT_WINDOW_MS).length;
    rules.push({ y: RECONNECT_WINDOW_MS, label: `reconnection window, 3 min: ${within} attempts fit, even at the latest`, color: '#555' });
  }
  const bounds = [policy.maxAge, policy.deadline === null ? null : policy.deadline - startAt].filter((b): b is number => b !== null);
  const expiry = bounds.length ? Math.min(...bounds) : null;
  // a bound far beyond the attempts shown would squash them; the subtitle names it instead
  if (expiry !== null && expiry <= dataMax * 10)
    rules.push({ y: expiry, label: `${formatDuration(expiry)}: the delivery expires; no attempt after this line`, color: PALETTE[1] });
  const example = retries[Math.min(retries.length - 1, 4)];
  const subtitle = [
    `Policy: ${describePolicy(policy)}.`,
    example
      ? `Read: attempt ${example.attempt} comes ${formatDuration(example.minMs)} to ${formatDuration(example.p95Ms)} after the first in 95% of ${preview.draws.toLocaleString('en-US')} random draws, half the time within ${formatDuration(example.medianMs)}.`
      : 'There is no retry to show: the policy makes a single attempt.',
  ];
  const what = kind === 'telemetry' ? `telemetry QoS ${qos}` : kind;
  return renderFigure({
    title: `When a failing ${what} delivery is attempted again`,
    subtitle,
    panels: [
      {
        x: { label: 'attempt', integer: true },
        y: { label: 'time since the first attempt (log scale)', scale: 'log', ticks: DURATION_TICKS, format: formatDuration },
        bands: [
          {
            name: 'fastest to 95th percentile of the draws',
            color: PALETTE[0],
            points: retries.map((a) => [a.attempt, Math.max(a.minMs, 1), a.p95Ms]),
          },
        ],
        lines: [
          {
            name: 'median',
            color: PALETTE[0],
            points: retries.map((a) => [a.attempt, a.medianMs]),
            pointLabel: (_x, y) => formatDuration(y),
          },
          {
            name: 'latest possible (every draw at its maximum)',
            color: PALETTE[2],
            dashed: true,
            points: latest.slice(1).map((y, i) => [i + 2, y]),
          },
        ],
        rules,
      },
    ],
    notes: [
      `Attempt 1 is at 0. Every attempt fails; ${attemptMs ? `each takes ${formatDuration(attemptMs)} before its wait begins` : 'attempts take no time'}. Seeded draws: the picture repeats exactly.`,
      'The Bosch IoT Hub retry guide counts three attempts within three minutes as reconnecting, not as downtime.',
      ...(preview.endings.expired
        ? [`Draws stop counting once they expire: the last attempt shown is reached by ${reachedShare(preview)} of them.`]
        : []),
    ],
    panelWidth: 900,
    panelHeight: 460,
  });
}

function reachedShare(preview: SchedulePreview): string {
  return share(preview.attempts[preview.attempts.length - 1]!.draws, preview.draws);
}

/** A share of the draws that never rounds a few missing ones away. */
function share(part: number, all: number): string {
  if (part === all) return 'always';
  const pct = (100 * part) / all;
  return pct > 99.9 ? '>99.9%' : `${pct.toFixed(1)}%`;
}
