import ms from 'ms';
import { InvalidInputError, type Problem } from '../errors';
import { defaultPolicy } from './defaults';
import type { BackoffPolicy, BackoffPolicyInput, Duration, MessageKind } from './types';

export interface PolicyContext {
  kind: MessageKind;
  qos?: 0 | 1;
  /** Epoch ms used to refuse a deadline in the past. */
  now: number;
}

/** Every problem with a policy input, fields named without prefix (`max`, `deadline`). */
export function policyProblems(input: BackoffPolicyInput | undefined, context: PolicyContext): Problem[] {
  try {
    resolvePolicy(input, context);
    return [];
  } catch (err) {
    if (err instanceof InvalidInputError) return err.problems;
    throw err;
  }
}

/** The kind's defaults merged with `input`, validated; throws InvalidInputError listing every problem. */
export function validatePolicy(input: BackoffPolicyInput | undefined, context: PolicyContext): BackoffPolicy {
  return resolvePolicy(input, context);
}

function resolvePolicy(input: BackoffPolicyInput | undefined, context: PolicyContext): BackoffPolicy {
  const problems: Problem[] = [];
  const policy = defaultPolicy(context.kind, context.qos ?? 1);
  const i = input ?? {};
  const duration = (field: string, value: Duration | undefined): number | undefined => {
    if (value === undefined) return undefined;
    const n = typeof value === 'number' ? value : ms(value as Parameters<typeof ms>[0]);
    if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) {
      problems.push({ field, message: `must be a positive duration, got ${JSON.stringify(value)}` });
      return undefined;
    }
    return n;
  };
  if (i.jitter !== undefined) {
    if (!['full', 'equal', 'decorrelated', 'none'].includes(i.jitter)) {
      problems.push({ field: 'jitter', message: `must be one of full, equal, decorrelated, none, got ${JSON.stringify(i.jitter)}` });
    } else policy.jitter = i.jitter;
  }
  policy.initial = duration('initial', i.initial) ?? policy.initial;
  policy.min = duration('min', i.min) ?? policy.min;
  policy.max = duration('max', i.max) ?? policy.max;
  if (i.maxAge !== undefined) policy.maxAge = i.maxAge === null ? null : (duration('maxAge', i.maxAge) ?? policy.maxAge);
  if (i.multiplier !== undefined) {
    if (typeof i.multiplier !== 'number' || !(i.multiplier >= 1)) problems.push({ field: 'multiplier', message: `must be a number ≥ 1, got ${JSON.stringify(i.multiplier)}` });
    else policy.multiplier = i.multiplier;
  }
  if (i.maxAttempts !== undefined) {
    if (!Number.isInteger(i.maxAttempts) || i.maxAttempts < 0) problems.push({ field: 'maxAttempts', message: `must be a whole number ≥ 0, got ${JSON.stringify(i.maxAttempts)}` });
    else policy.maxAttempts = i.maxAttempts;
  }
  if (i.deadline !== undefined && i.deadline !== null) {
    const t = i.deadline instanceof Date ? i.deadline.getTime() : typeof i.deadline === 'number' ? i.deadline : Date.parse(i.deadline);
    if (!Number.isFinite(t)) problems.push({ field: 'deadline', message: `must be a date, got ${JSON.stringify(i.deadline)}` });
    else if (t <= context.now) problems.push({ field: 'deadline', message: `is in the past (${new Date(t).toISOString()})` });
    else {
      policy.deadline = t;
      // a command response's own deadline replaces the 5 min default age bound
      if (context.kind === 'command-response' && i.maxAge === undefined) policy.maxAge = null;
    }
  }
  if (policy.min > policy.max) problems.push({ field: 'min', message: `must not exceed max (${policy.min} ms > ${policy.max} ms)` });
  if (context.kind === 'telemetry' && context.qos === 0 && policy.maxAttempts !== 1) {
    problems.push({ field: 'maxAttempts', message: 'telemetry QoS 0 is sent exactly once; use qos 1 for retries' });
  }
  if (problems.length > 0) throw new InvalidInputError(problems, 'backoff policy');
  return policy;
}
