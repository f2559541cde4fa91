import { readFileSync } from 'node:fs';
import { DEFAULT_RETRY_BUDGET, type RetryBudgetOptions } from '../endpoints/budget';
import type { OutageRecording } from '../endpoints/recording';
import type { ArrivalProfile } from '../endpoints/types';
import { InvalidInputError, type Problem } from '../errors';
import { plotFormat, renderFigure, writePlot } from '../plot';
import { outageFigure } from '../plot/outage';
import { describePolicy, formatDuration, policyProblems, validatePolicy, type BackoffPolicy, type BackoffPolicyInput } from '../policy';
import { recordedFigures, replayOutage, type OutageFigures } from '../simulate';
import { parseOutageRecording } from '../simulate/outage-file';
import type { ConnectionFlags } from './connection';
import { fetchRecording } from './endpoint-export';
import { timeFlag } from './filter-flags';
import { wholeNumber } from './number-flags';
import { emit } from './output';

/** A policy field → the flag that changes it. */
const POLICY_FLAGS = {
  jitter: '--jitter',
  initial: '--initial',
  multiplier: '--multiplier',
  min: '--min',
  max: '--max',
  maxAttempts: '--max-attempts',
  maxAge: '--max-age',
} as const;

/** The policy flags as typed, one per field of POLICY_FLAGS. */
type PolicyFlags = { [field in keyof typeof POLICY_FLAGS]?: string };

export interface OutageFlags extends ConnectionFlags, PolicyFlags {
  fromEndpoint?: string;
  fromFile?: string;
  since?: string;
  budget?: string;
  budgetBurst?: string;
  seed: string;
  json?: boolean;
  plot?: string;
}

interface Candidate {
  /** Each recorded profile's policy under the candidate, in the recording's order. */
  policies: BackoffPolicy[];
  budget: RetryBudgetOptions | null;
  /** How the budget was chosen: from the flags, as recorded, or assumed (the workers did not say). */
  budgetFrom: 'flags' | 'recorded' | 'default';
}

/**
 * `redeliver simulate --from-endpoint E | --from-file F`: the recorded outage replayed under the candidate
 * (the recorded policies with the policy flags typed applied, and the budget), beside what was recorded.
 * `typed(field)` says whether the user gave a flag (simulate's --min has a default of its own).
 */
export async function simulateOutage(flags: OutageFlags, typed: (field: keyof OutageFlags) => boolean): Promise<void> {
  const problems: Problem[] = [];
  const since = timeFlag('--since', flags.since, problems);
  const seed = wholeNumber(problems, '--seed', flags.seed, 0, 2 ** 32 - 1);
  const overrides = policyOverrides(flags, typed, problems);
  const budget = budgetFlags(flags, problems);
  if (flags.fromEndpoint !== undefined && flags.fromFile !== undefined)
    problems.push({ field: '--from-file', message: 'replays a file: give it or --from-endpoint, not both' });
  if (flags.fromFile !== undefined && flags.since !== undefined)
    problems.push({ field: '--since', message: 'is for --from-endpoint: a file holds its own window' });
  if (flags.plot !== undefined && !plotFormat(flags.plot))
    problems.push({ field: '--plot', message: `must name a .svg or .png file, got ${JSON.stringify(flags.plot)}` });
  if (problems.length) throw new InvalidInputError(problems, 'flags');

  const recording = await loadRecording(flags, since);
  const candidate = candidateOf(recording, overrides, budget);
  const replay = replayOutage(recording, {
    policyOf: (p) => candidate.policies[recording.profiles.indexOf(p)]!,
    budget: candidate.budget,
    seed,
  });
  const figures = { recorded: recordedFigures(recording), replayed: replay.figures };
  const output = {
    endpoint: recording.endpoint,
    from: recording.from,
    to: recording.to,
    complete: recording.complete,
    deliveries: replay.deliveries,
    candidate: { policies: candidate.policies, budget: candidate.budget ?? 'off', budgetFrom: candidate.budgetFrom },
    ...figures,
  };
  emit(!!flags.json, output, () => outageText(recording, candidate, figures, replay.deliveries));
  if (flags.plot) {
    const figure = outageFigure({ recording, replayed: replay.seconds, figures, candidate: candidateWords(recording, candidate), seed });
    await writePlot(flags.plot, renderFigure(figure));
  }
}

/** The policy flags typed, as a policy input: each one is checked against every recorded profile later. */
function policyOverrides(flags: OutageFlags, typed: (field: keyof OutageFlags) => boolean, problems: Problem[]): BackoffPolicyInput {
  const input: Record<string, unknown> = {};
  for (const field of Object.keys(POLICY_FLAGS) as (keyof typeof POLICY_FLAGS)[]) {
    const value = flags[field];
    if (value === undefined || !typed(field)) continue;
    const numeric = field === 'multiplier' || field === 'maxAttempts';
    if (numeric && (value.trim() === '' || !Number.isFinite(Number(value))))
      problems.push({ field: POLICY_FLAGS[field], message: `must be a number, got ${JSON.stringify(value)}` });
    input[field] = numeric ? Number(value) : field === 'maxAge' && value === 'none' ? null : value;
  }
  for (const p of policyProblems(input as BackoffPolicyInput, {})) {
    problems.push({ field: POLICY_FLAGS[p.field as keyof typeof POLICY_FLAGS] ?? p.field, message: p.message });
  }
  return input as BackoffPolicyInput;
}

/** `--budget off | N/s` and `--budget-burst N` (burst NaN when not given); undefined when neither was given (the recorded one stands). */
export function budgetFlags(
  flags: Pick<OutageFlags, 'budget' | 'budgetBurst'>,
  problems: Problem[],
): RetryBudgetOptions | null | undefined {
  if (flags.budget === undefined) {
    if (flags.budgetBurst !== undefined) problems.push({ field: '--budget-burst', message: 'needs --budget N/s' });
    return undefined;
  }
  if (flags.budget === 'off') {
    if (flags.budgetBurst !== undefined) problems.push({ field: '--budget-burst', message: 'means nothing with --budget off' });
    return null;
  }
  const rate = /^(\d+(?:\.\d+)?)(?:\/s)?$/.exec(flags.budget.trim());
  if (!rate || !(Number(rate[1]) > 0)) {
    problems.push({
      field: '--budget',
      message: `must be off or retries per second above 0, such as 10/s, got ${JSON.stringify(flags.budget)}`,
    });
    return undefined;
  }
  const burst = flags.budgetBurst === undefined ? NaN : wholeNumber(problems, '--budget-burst', flags.budgetBurst, 1);
  return { perSecond: Number(rate[1]), burst };
}

async function loadRecording(flags: OutageFlags, since: Date | undefined): Promise<OutageRecording> {
  if (flags.fromFile !== undefined) {
    const text = readFileSync(flags.fromFile === '-' ? 0 : flags.fromFile, 'utf8');
    return parseOutageRecording(text, `recording ${flags.fromFile === '-' ? 'on stdin' : flags.fromFile}`);
  }
  return fetchRecording(flags, flags.fromEndpoint!, since);
}

/** The recorded policies with the flags applied (a problem names the flag and the profile), and the budget. */
function candidateOf(recording: OutageRecording, overrides: BackoffPolicyInput, budget: RetryBudgetOptions | null | undefined): Candidate {
  const problems: Problem[] = [];
  const policies = recording.profiles.map((p: ArrivalProfile) => {
    const input = { ...p.policy, ...overrides };
    const found = policyProblems(input, { kind: p.kind });
    for (const q of found)
      problems.push({
        field: POLICY_FLAGS[q.field as keyof typeof POLICY_FLAGS] ?? q.field,
        message: `${q.message} (${p.kind} deliveries)`,
      });
    return found.length ? p.policy : validatePolicy(input, { kind: p.kind });
  });
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  const recorded = recording.budget;
  if (budget !== undefined) {
    const burst =
      budget && !Number.isNaN(budget.burst) ? budget.burst : typeof recorded === 'object' ? recorded.burst : DEFAULT_RETRY_BUDGET.burst;
    return { policies, budget: budget && { perSecond: budget.perSecond, burst }, budgetFrom: 'flags' };
  }
  if (recorded === 'unknown') return { policies, budget: DEFAULT_RETRY_BUDGET, budgetFrom: 'default' };
  return { policies, budget: recorded === 'off' ? null : recorded, budgetFrom: 'recorded' };
}

function candidateWords(recording: OutageRecording, c: Candidate): string {
  const budget = c.budget ? `retry budget ${c.budget.perSecond}/s, burst ${c.budget.burst}` : 'no retry budget';
  const from = { flags: '', recorded: ' (as recorded)', default: ' (assumed: the workers did not report theirs)' }[c.budgetFrom];
  const policies = [...new Set(c.policies.map((p, i) => `${recording.profiles[i]!.kind}: ${describePolicy(p)}`))];
  return `${policies.join('; ') || 'no deliveries recorded'}; ${budget}${from}`;
}

function outageText(
  recording: OutageRecording,
  c: Candidate,
  f: { recorded: OutageFigures; replayed: OutageFigures },
  deliveries: number,
): string[] {
  const n = (x: number) => x.toLocaleString('en-US');
  const lateness = (l: OutageFigures['lateness']) =>
    l ? `${formatDuration(l.p50Ms)} / ${formatDuration(l.p95Ms)} / ${formatDuration(l.maxMs)}` : '-';
  const rows: [string, string, string][] = [
    ['requests', n(f.recorded.requests), n(f.replayed.requests)],
    ['requests while down', n(f.recorded.requestsWhileDown), n(f.replayed.requestsWhileDown)],
    ['peak after recovery (/s)', n(f.recorded.peakAfterRecovery), n(f.replayed.peakAfterRecovery)],
    ['drain (s)', String(f.recorded.drainSeconds), String(f.replayed.drainSeconds)],
    ['last retry (s)', String(f.recorded.lastRetrySeconds), String(f.replayed.lastRetrySeconds)],
    ['expired', n(f.recorded.expired), n(f.replayed.expired)],
    ['exhausted', n(f.recorded.exhausted), n(f.replayed.exhausted)],
    ['lateness p50 / p95 / max', lateness(f.recorded.lateness), lateness(f.replayed.lateness)],
  ];
  const width = 4 + Math.max(...rows.map(([, , b]) => b.length));
  const periods = recording.periods.map(
    (p) => `${p.reason} for ${formatDuration(Date.parse(p.to) - Date.parse(p.from))}${p.ongoing ? ' (still failing)' : ''}`,
  );
  return [
    `${recording.endpoint}, ${recording.from} → ${recording.to}${recording.complete ? '' : ' (the detail of earlier times is no longer kept)'}`,
    `${periods.length} failure period${periods.length === 1 ? '' : 's'}${periods.length ? `: ${periods.join(', ')}` : ''}; ${n(deliveries)} deliveries replayed`,
    `replayed under: ${candidateWords(recording, c)}`,
    '',
    ...[['', 'recorded', 'replayed'] as const, ...rows].map(([name, a, b]) => `${name.padEnd(26)}${a.padStart(12)}${b.padStart(width)}`),
  ];
}
