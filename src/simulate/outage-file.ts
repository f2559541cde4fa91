import { z } from 'zod';
import { InvalidInputError, type Problem } from '../errors';
import { RECORDING_FORMAT, type OutageRecording } from '../endpoints/recording';
import { policyProblems, validatePolicy } from '../policy/validate';
import { MESSAGE_KINDS, type BackoffPolicyInput } from '../policy/types';
import { zodProblems } from '../validation/delivery';

const count = z.number().int().nonnegative();
const isoTime = z.string().refine((s) => Number.isFinite(Date.parse(s)), 'must be an ISO 8601 time');
const bucket = z.strictObject({
  second: z.number().int(),
  requests: count,
  failed: count,
  retries: count,
  arrivals: z.array(count).optional(),
  expired: count.optional(),
  exhausted: count.optional(),
  late: count.optional(),
  lateMs: z.number().nonnegative().optional(),
});
/** Problems listed at the most: a file wrong throughout would otherwise fill the screen with one mistake. */
const SHOWN_PROBLEMS = 20;
const recordingSchema = z.strictObject({
  format: z.literal(RECORDING_FORMAT),
  endpoint: z.string(),
  from: isoTime,
  to: isoTime,
  complete: z.boolean(),
  budget: z.union([z.enum(['off', 'unknown']), z.strictObject({ perSecond: z.number().positive(), burst: z.number().min(1) })]),
  profiles: z.array(z.strictObject({ kind: z.enum(MESSAGE_KINDS), policy: z.record(z.string(), z.unknown()) })),
  periods: z.array(
    z.strictObject({ from: isoTime, to: isoTime, attempts: count, failures: count, reason: z.string(), ongoing: z.boolean().optional() }),
  ),
  seconds: z.array(bucket),
  hours: z.array(bucket),
});

/**
 * A recording file (`redeliver endpoint export`) read back: JSON text → OutageRecording, or an
 * InvalidInputError naming every wrong field, e.g. `periods.0.to` or `profiles.1.policy.max`.
 */
export function parseOutageRecording(text: string, what = 'recording'): OutageRecording {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InvalidInputError([{ field: '(file)', message: `is not JSON: ${(err as Error).message}` }], what);
  }
  const parsed = recordingSchema.safeParse(json);
  if (!parsed.success) throw new InvalidInputError(shortened(zodProblems(parsed.error, '(recording)')), what);
  const recording = parsed.data;
  const problems: Problem[] = [];
  for (const [i, p] of recording.profiles.entries()) {
    for (const q of policyProblems(p.policy as BackoffPolicyInput, { kind: p.kind }))
      problems.push({ field: `profiles.${i}.policy.${q.field}`, message: q.message });
  }
  for (const [i, b] of recording.seconds.entries()) {
    if ((b.arrivals?.length ?? 0) > recording.profiles.length)
      problems.push({
        field: `seconds.${i}.arrivals`,
        message: `has ${b.arrivals!.length} counts for ${recording.profiles.length} profiles`,
      });
  }
  if (problems.length) throw new InvalidInputError(problems, what);
  // a hand-written profile may leave fields to the kind's defaults
  return {
    ...recording,
    profiles: recording.profiles.map((p) => ({ kind: p.kind, policy: validatePolicy(p.policy as BackoffPolicyInput, { kind: p.kind }) })),
  };
}

function shortened(problems: Problem[]): Problem[] {
  if (problems.length <= SHOWN_PROBLEMS) return problems;
  const more = { field: '(recording)', message: `${problems.length - SHOWN_PROBLEMS} more problems not listed` };
  return [...problems.slice(0, SHOWN_PROBLEMS), more];
}
