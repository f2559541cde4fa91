import { readFileSync } from 'node:fs';
import type { OutageRecording } from '../endpoints/recording';
import { InvalidInputError, type Problem } from '../errors';
import { plotFormat, renderFigure, writePlot } from '../plot';
import { formatDuration, policyProblems, type BackoffPolicyInput } from '../policy';
import type { OutageFigures } from '../simulate';
import { budgetOf, figureRows, whatIf, type Candidate } from '../simulate/what-if';
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
  const fieldName = (field: string) => POLICY_FLAGS[field as keyof typeof POLICY_FLAGS] ?? field;
  const { candidate, words, deliveries, figures, figure } = whatIf(recording, { overrides, budget, seed, fieldName, context: 'flags' });
  const output = {
    endpoint: recording.endpoint,
    from: recording.from,
    to: recording.to,
    complete: recording.complete,
    deliveries,
    candidate: { policies: candidate.policies, budget: candidate.budget ?? 'off', budgetFrom: candidate.budgetFrom },
    ...figures,
  };
  emit(!!flags.json, output, () => outageText(recording, candidate, words, figures, deliveries));
  if (flags.plot) await writePlot(flags.plot, renderFigure(figure));
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
export const budgetFlags = (flags: Pick<OutageFlags, 'budget' | 'budgetBurst'>, problems: Problem[]) =>
  budgetOf({ budget: flags.budget, burst: flags.budgetBurst }, problems, { budget: '--budget', burst: '--budget-burst' });

async function loadRecording(flags: OutageFlags, since: Date | undefined): Promise<OutageRecording> {
  if (flags.fromFile !== undefined) {
    const text = readFileSync(flags.fromFile === '-' ? 0 : flags.fromFile, 'utf8');
    return parseOutageRecording(text, `recording ${flags.fromFile === '-' ? 'on stdin' : flags.fromFile}`);
  }
  return fetchRecording(flags, flags.fromEndpoint!, since);
}

function outageText(
  recording: OutageRecording,
  c: Candidate,
  words: string,
  f: { recorded: OutageFigures; replayed: OutageFigures },
  deliveries: number,
): string[] {
  const n = (x: number) => x.toLocaleString('en-US');
  const rows = figureRows(f);
  const width = 4 + Math.max(...rows.map(([, , b]) => b.length));
  const periods = recording.periods.map(
    (p) => `${p.reason} for ${formatDuration(Date.parse(p.to) - Date.parse(p.from))}${p.ongoing ? ' (still failing)' : ''}`,
  );
  return [
    `${recording.endpoint}, ${recording.from} → ${recording.to}${recording.complete ? '' : ' (the detail of earlier times is no longer kept)'}`,
    `${periods.length} failure period${periods.length === 1 ? '' : 's'}${periods.length ? `: ${periods.join(', ')}` : ''}; ${n(deliveries)} deliveries replayed`,
    `replayed under: ${words}`,
    '',
    ...[['', 'recorded', 'replayed'] as const, ...rows].map(([name, a, b]) => `${name.padEnd(26)}${a.padStart(12)}${b.padStart(width)}`),
  ];
}
