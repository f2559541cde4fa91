import { InvalidInputError, type Problem } from '../errors';
import { defaultPolicy } from './defaults';
import { formatDuration, parseDuration } from './duration';
import { JITTERS, type BackoffPolicy, type BackoffPolicyInput, type Jitter, type MessageKind } from './types';

export interface PolicyContext {
  /** Whose defaults fill the fields the input leaves out. Default `event`. */
  kind?: MessageKind;
  /** Telemetry only. Default 1. */
  qos?: 0 | 1;
  /** Epoch ms against which a deadline must lie in the future. Default Date.now(). */
  now?: number;
}

/** The largest epoch ms a Date holds (ECMAScript: ±8.64e15 ms, 275,760 years). */
const MAX_DATE_MS = 8.64e15;

/** Every field a policy input may have; anything else is refused rather than silently ignored. */
/**
 * The longest wait or age a policy may name: 10 years. Longer than any delivery should wait, and far inside
 * what a Date, a Temporal timer and an activity's retry delay can hold (a larger one would leave it stuck).
 */
export const MAX_POLICY_DURATION_MS = 3650 * 24 * 60 * 60 * 1000;

export const POLICY_FIELDS = ['jitter', 'initial', 'multiplier', 'min', 'max', 'maxAttempts', 'maxAge', 'deadline'] as const;

/**
 * The kind's defaults merged with `input`, validated.
 * Throws InvalidInputError listing every problem, each naming the field and the value.
 */
export function validatePolicy(input?: BackoffPolicyInput, context: PolicyContext = {}): BackoffPolicy {
  const { policy, problems } = resolvePolicy(input, context);
  if (problems.length > 0) throw new InvalidInputError(problems, 'backoff policy');
  return policy;
}

/** Every problem with a policy input, fields named without prefix (`max`, `deadline`); empty when valid. */
export function policyProblems(input: BackoffPolicyInput | undefined, context: PolicyContext = {}): Problem[] {
  return resolvePolicy(input, context).problems;
}

/** Shows a value as the user wrote it: strings quoted, NaN as NaN, dates in ISO 8601; long ones cut short. */
function shown(value: unknown): string {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : value.toISOString();
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // BigInts and cycles have no JSON, objects without a prototype no string
    text = Object.prototype.toString.call(value);
  }
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/** The kind's defaults merged with `input`, and every problem with it (fields named without prefix): the policy is valid when there are none. */
export function resolvePolicy(
  input: BackoffPolicyInput | undefined,
  context: PolicyContext,
): { policy: BackoffPolicy; problems: Problem[] } {
  const kind = context.kind ?? 'event';
  const qos = context.qos ?? 1;
  const now = context.now ?? Date.now();
  const policy = defaultPolicy(kind, qos);
  const problems: Problem[] = [];
  const problem = (field: string, message: string) => problems.push({ field, message });
  if (input === undefined || input === null) return { policy, problems };
  if (typeof input !== 'object' || Array.isArray(input)) {
    problem('(policy)', `must be an object of ${POLICY_FIELDS.join(', ')}, got ${shown(input)}`);
    return { policy, problems };
  }

  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!(POLICY_FIELDS as readonly string[]).includes(key)) problem(key, `is not a known field (known: ${POLICY_FIELDS.join(', ')})`);
  }
  const given = (field: (typeof POLICY_FIELDS)[number]) => raw[field] !== undefined;

  const duration = (field: string, floor: 'above 0' | '0 or more'): number | undefined => {
    const value = raw[field];
    const n = parseDuration(value);
    if (n === undefined) problem(field, `must be a duration in ms or a string such as "200ms", "5m", "7 days", got ${shown(value)}`);
    else if (floor === 'above 0' ? n <= 0 : n < 0) problem(field, `must be ${floor}, got ${shown(value)}`);
    else if (n > MAX_POLICY_DURATION_MS) problem(field, `must be at most 10 years (3650 days), got ${shown(value)}`);
    else return n;
    return undefined;
  };

  if (given('jitter')) {
    if (JITTERS.includes(raw.jitter as Jitter)) policy.jitter = raw.jitter as Jitter;
    else problem('jitter', `must be one of ${JITTERS.join(', ')}, got ${shown(raw.jitter)}`);
  }
  const initial = given('initial') ? duration('initial', 'above 0') : policy.initial;
  const min = given('min') ? duration('min', '0 or more') : policy.min;
  const max = given('max') ? duration('max', 'above 0') : policy.max;
  if (initial !== undefined) policy.initial = initial;
  if (min !== undefined) policy.min = min;
  if (max !== undefined) policy.max = max;
  if (given('maxAge')) {
    if (raw.maxAge === null) policy.maxAge = null;
    else policy.maxAge = duration('maxAge', 'above 0') ?? policy.maxAge;
  }
  if (given('multiplier')) {
    const m = raw.multiplier;
    if (typeof m === 'number' && Number.isFinite(m) && m >= 1) policy.multiplier = m;
    else problem('multiplier', `must be a number ≥ 1 (1 keeps the window constant), got ${shown(m)}`);
  }
  if (given('maxAttempts')) {
    const n = raw.maxAttempts;
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0) policy.maxAttempts = n;
    else problem('maxAttempts', `must be a whole number ≥ 0 (0 = unlimited), got ${shown(n)}`);
  }
  if (given('deadline') && raw.deadline !== null) {
    const d = raw.deadline;
    const t = d instanceof Date ? d.getTime() : typeof d === 'number' ? d : typeof d === 'string' ? Date.parse(d) : NaN;
    if (!Number.isFinite(t)) problem('deadline', `must be a date (ISO 8601 string, epoch ms or Date), got ${shown(d)}`);
    // beyond this no Date holds it: it could not be shown, compared or stored as a time
    else if (Math.abs(t) > MAX_DATE_MS) problem('deadline', `must be a date up to +275760-09-13 (the last a Date holds), got ${shown(d)}`);
    else if (t <= now) problem('deadline', `is in the past: got ${shown(d)}, now is ${new Date(now).toISOString()}`);
    else {
      policy.deadline = t;
      // a command response's own deadline replaces its 5 min default age bound
      if (kind === 'command-response' && !given('maxAge')) policy.maxAge = null;
    }
  }

  // inverted bounds, checked only between values that are themselves valid
  if (min !== undefined && max !== undefined && min > max) {
    problem('min', `must not exceed max, got ${formatDuration(min)} > ${formatDuration(max)}`);
  }
  if (initial !== undefined && max !== undefined && initial > max) {
    problem('initial', `must not exceed max, got ${formatDuration(initial)} > ${formatDuration(max)}`);
  }
  if (kind === 'telemetry' && qos === 0 && policy.maxAttempts !== 1) {
    problem('maxAttempts', `must be 1 for telemetry QoS 0, which is sent exactly once (use qos 1 for retries), got ${policy.maxAttempts}`);
  }
  return { policy, problems };
}
