import { DEFAULT_RETRY_BUDGET, type RetryBudgetOptions } from '../endpoints/budget';
import type { OutageRecording } from '../endpoints/recording';
import type { ArrivalProfile } from '../endpoints/types';
import { InvalidInputError, type Problem } from '../errors';
import { outageFigure } from '../plot/outage';
import type { Figure } from '../plot';
import { describePolicy, formatDuration, policyProblems, validatePolicy, type BackoffPolicy, type BackoffPolicyInput } from '../policy';
import { wholeNumber } from '../validation/whole-number';
import { recordedFigures, replayOutage, type OutageFigures } from './index';

/** A candidate against a recorded outage: each recorded profile's policy under it, and the retry budget. */
export interface Candidate {
  /** Each recorded profile's policy under the candidate, in the recording's order. */
  policies: BackoffPolicy[];
  budget: RetryBudgetOptions | null;
  /** How the budget was chosen: given, as recorded, or assumed (the workers did not say). */
  budgetFrom: 'flags' | 'recorded' | 'default';
}

export interface WhatIfInput {
  /** Policy fields that change every recorded profile's policy. */
  overrides: BackoffPolicyInput;
  /** The budget to replay with; null: none; undefined: the recorded one (burst NaN: the recorded or default burst). */
  budget: RetryBudgetOptions | null | undefined;
  seed: number;
  /** How a problem names a policy field (the CLI's flags, the console's form fields). */
  fieldName?: (field: string) => string;
  /** What the problems are problems of, for the error's message (default `candidate`). */
  context?: string;
}

export interface WhatIf {
  candidate: Candidate;
  /** The candidate in words, as the plot's caption says it. */
  words: string;
  deliveries: number;
  figures: { recorded: OutageFigures; replayed: OutageFigures };
  figure: Figure;
}

/** A recorded outage replayed under a candidate, beside what was recorded: `redeliver simulate` and the console's what-if. */
export function whatIf(recording: OutageRecording, input: WhatIfInput): WhatIf {
  const named = { fieldName: input.fieldName ?? ((f: string) => f), context: input.context ?? 'candidate' };
  const candidate = candidateOf(recording, input.overrides, input.budget, named);
  const replay = replayOutage(recording, {
    policyOf: (p) => candidate.policies[recording.profiles.indexOf(p)]!,
    budget: candidate.budget,
    seed: input.seed,
  });
  const figures = { recorded: recordedFigures(recording), replayed: replay.figures };
  const words = candidateWords(recording, candidate);
  const figure = outageFigure({ recording, replayed: replay.seconds, figures, candidate: words, seed: input.seed });
  return { candidate, words, deliveries: replay.deliveries, figures, figure };
}

/** The recorded policies with the overrides applied (a problem names the field and the profile), and the budget. */
function candidateOf(
  recording: OutageRecording,
  overrides: BackoffPolicyInput,
  budget: RetryBudgetOptions | null | undefined,
  { fieldName, context }: { fieldName: (field: string) => string; context: string },
): Candidate {
  const problems: Problem[] = [];
  const policies = recording.profiles.map((p: ArrivalProfile) => {
    const input = { ...p.policy, ...overrides };
    const found = policyProblems(input, { kind: p.kind });
    for (const q of found) problems.push({ field: fieldName(q.field), message: `${q.message} (${p.kind} deliveries)` });
    return found.length ? p.policy : validatePolicy(input, { kind: p.kind });
  });
  if (problems.length) throw new InvalidInputError(problems, context);
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

/**
 * A candidate budget as typed: `off`, or retries per second (`10` or `10/s`) with an optional whole burst (NaN when
 * not given); undefined when neither was given (the recorded one stands). `names`: how problems name the two fields.
 */
export function budgetOf(
  typed: { budget?: string | undefined; burst?: string | undefined },
  problems: Problem[],
  names: { budget: string; burst: string },
): RetryBudgetOptions | null | undefined {
  if (typed.budget === undefined) {
    if (typed.burst !== undefined) problems.push({ field: names.burst, message: `needs ${names.budget} N/s` });
    return undefined;
  }
  if (typed.budget === 'off') {
    if (typed.burst !== undefined) problems.push({ field: names.burst, message: `means nothing with ${names.budget} off` });
    return null;
  }
  const rate = /^(\d+(?:\.\d+)?)(?:\/s)?$/.exec(typed.budget.trim());
  if (!rate || !(Number(rate[1]) > 0)) {
    problems.push({
      field: names.budget,
      message: `must be off or retries per second above 0, such as 10/s, got ${JSON.stringify(typed.budget)}`,
    });
    return undefined;
  }
  const burst = typed.burst === undefined ? NaN : wholeNumber(problems, names.burst, typed.burst, 1);
  return { perSecond: Number(rate[1]), burst };
}

/** The recorded and replayed figures side by side, as rows of text: name, recorded, replayed (numbers in en-US). */
export function figureRows(f: WhatIf['figures']): [string, string, string][] {
  const n = (x: number) => x.toLocaleString('en-US');
  const lateness = (l: OutageFigures['lateness']) =>
    l ? `${formatDuration(l.p50Ms)} / ${formatDuration(l.p95Ms)} / ${formatDuration(l.maxMs)}` : '-';
  return [
    ['requests', n(f.recorded.requests), n(f.replayed.requests)],
    ['requests while down', n(f.recorded.requestsWhileDown), n(f.replayed.requestsWhileDown)],
    ['peak after recovery (/s)', n(f.recorded.peakAfterRecovery), n(f.replayed.peakAfterRecovery)],
    ['drain (s)', String(f.recorded.drainSeconds), String(f.replayed.drainSeconds)],
    ['last retry (s)', String(f.recorded.lastRetrySeconds), String(f.replayed.lastRetrySeconds)],
    ['expired', n(f.recorded.expired), n(f.replayed.expired)],
    ['exhausted', n(f.recorded.exhausted), n(f.replayed.exhausted)],
    ['lateness p50 / p95 / max', lateness(f.recorded.lateness), lateness(f.replayed.lateness)],
  ];
}
