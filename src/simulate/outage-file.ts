import { z } from 'zod';
import { InvalidInputError, type Problem } from '../errors';
import { KEPT_ENDPOINT_PERIODS } from '../endpoints/downtime';
import { KEPT_DETAIL_SECONDS, KEPT_PROFILES, RECORDING_FORMAT, type OutageRecording } from '../endpoints/recording';
import { policyProblems, validatePolicy } from '../policy/validate';
import { MESSAGE_KINDS, type BackoffPolicyInput } from '../policy/types';
import { zodProblems } from '../validation/delivery';
import type { Assignable } from '../validation/schema-types';

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
/**
 * What a replay takes from a file, at the most (docs/outage-replay.md, "Bounds"): what an endpoint itself keeps
 * (3,600 seconds of detail, 200 failure periods, 16 profiles), and first attempts and a window that a replay
 * runs through in seconds and a few hundred MB. A small file can ask for millions of deliveries or years of
 * retries: it is refused, naming the field, before anything is built.
 */
const DAY_MS = 24 * 3_600_000;

export const REPLAY_BOUNDS = {
  /** First attempts in all (`seconds.*.arrivals`): each is a delivery replayed, about 400 bytes of memory. */
  arrivals: 1_000_000,
  /** From `from` to `to`: every second, hour and period's end lies inside it (hours are only summed). */
  windowMs: 3_660 * DAY_MS,
  /** From the first arrival to the last period's end: how long a replay follows retries. */
  horizonMs: 31 * DAY_MS,
  seconds: KEPT_DETAIL_SECONDS,
  periods: KEPT_ENDPOINT_PERIODS,
  profiles: KEPT_PROFILES,
} as const;

/** Problems listed at the most: a file wrong throughout would otherwise fill the screen with one mistake. */
const SHOWN_PROBLEMS = 20;
const recordingSchema = z.strictObject({
  format: z.literal(RECORDING_FORMAT),
  endpoint: z.string(),
  from: isoTime,
  to: isoTime,
  complete: z.boolean(),
  budget: z.union([z.enum(['off', 'unknown']), z.strictObject({ perSecond: z.number().positive(), burst: z.number().min(1) })]),
  profiles: z.array(z.strictObject({ kind: z.enum(MESSAGE_KINDS), policy: z.record(z.string(), z.unknown()) })).max(REPLAY_BOUNDS.profiles),
  periods: z
    .array(
      z.strictObject({ from: isoTime, to: isoTime, attempts: count, failures: count, reason: z.string(), ongoing: z.boolean().optional() }),
    )
    .max(REPLAY_BOUNDS.periods),
  seconds: z.array(bucket).max(REPLAY_BOUNDS.seconds),
  // one an hour of the window, and the hour either end overlaps
  hours: z.array(bucket).max(REPLAY_BOUNDS.windowMs / 3_600_000 + 2),
});
// a recording the endpoint exports is one the schema reads (but for the profiles' policies, which
// validatePolicy checks field by field); the way back is parseOutageRecording's return type
type _RecordingIsSchema = Assignable<Omit<OutageRecording, 'profiles'>, Omit<z.input<typeof recordingSchema>, 'profiles'>>;

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
  const problems: Problem[] = boundsProblems(recording);
  if (problems.length) throw new InvalidInputError(shortened(problems), what);
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

/** The window, the periods and the buckets inside it, and the first attempts, within REPLAY_BOUNDS: checked before the replay builds anything. */
function boundsProblems(recording: z.infer<typeof recordingSchema>): Problem[] {
  const [from, to] = [Date.parse(recording.from), Date.parse(recording.to)];
  if (to < from) return [{ field: 'to', message: `must not be before from (${recording.from}), got ${recording.to}` }];
  if (to - from > REPLAY_BOUNDS.windowMs)
    return [
      { field: 'to', message: `is ${days(to - from)} days after from: a recording covers at most ${days(REPLAY_BOUNDS.windowMs)} days` },
    ];
  const window = `inside the recording's window (${recording.from} to ${recording.to})`;
  const problems: Problem[] = [];
  for (const name of ['seconds', 'hours'] as const) {
    const span = name === 'hours' ? 3_600_000 : 1_000;
    recording[name].forEach((b, i) => {
      if (b.second * 1000 + span <= from || b.second * 1000 > to)
        problems.push({ field: `${name}.${i}.second`, message: `must lie ${window}, got ${b.second} (epoch seconds)` });
    });
  }
  const firstArrival = Math.min(...recording.seconds.filter((b) => b.arrivals?.some((n) => n > 0)).map((b) => b.second * 1000));
  // a period may have begun before the window (the export keeps it whole); its end bounds the replay's retries
  for (const [i, p] of recording.periods.entries()) {
    const end = Date.parse(p.to);
    const field = `periods.${i}.to`;
    if (end < Date.parse(p.from)) problems.push({ field, message: `must not be before its from (${p.from}), got ${p.to}` });
    else if (end > to) problems.push({ field, message: `must lie ${window}, got ${p.to}` });
    else if (end - firstArrival > REPLAY_BOUNDS.horizonMs) {
      const message = `is ${days(end - firstArrival)} days after the first arrival: a replay follows retries for at most ${days(REPLAY_BOUNDS.horizonMs)} days`;
      problems.push({ field, message });
    }
  }
  const arrivals = arrivalsProblem(recording.seconds);
  return arrivals ? [...problems, arrivals] : problems;
}

/** The first attempts in all, at most REPLAY_BOUNDS.arrivals: the second where the sum passes it is named. */
function arrivalsProblem(seconds: readonly { arrivals?: number[] | undefined }[]): Problem | undefined {
  let arrivals = 0;
  for (const [i, b] of seconds.entries()) {
    arrivals += (b.arrivals ?? []).reduce((sum, n) => sum + n, 0);
    if (arrivals > REPLAY_BOUNDS.arrivals) {
      const bound = REPLAY_BOUNDS.arrivals.toLocaleString('en');
      return { field: `seconds.${i}.arrivals`, message: `bring the first attempts to over ${bound}, the most a replay takes` };
    }
  }
  return undefined;
}

function days(ms: number): number {
  return Math.ceil(ms / DAY_MS);
}

function shortened(problems: Problem[]): Problem[] {
  if (problems.length <= SHOWN_PROBLEMS) return problems;
  const more = { field: '(recording)', message: `${problems.length - SHOWN_PROBLEMS} more problems not listed` };
  return [...problems.slice(0, SHOWN_PROBLEMS), more];
}
