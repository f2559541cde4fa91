/** The jitter strategies, in the order the docs and the CLI list them. */
export const JITTERS = ['full', 'equal', 'decorrelated', 'none'] as const;

/**
 * How the wait is drawn, with w = min(max, initial * multiplier^(attempts - 1)):
 * `full` random(0, w); `equal` w/2 + random(0, w/2); `decorrelated` min(max, random(initial, previous * 3));
 * `none` w itself.
 */
export type Jitter = (typeof JITTERS)[number];

export const MESSAGE_KINDS = ['telemetry', 'event', 'command-response'] as const;

export type MessageKind = (typeof MESSAGE_KINDS)[number];

/** Milliseconds, or a duration string such as '200ms', '5m', '7 days'. */
export type Duration = number | string;

/** A complete, validated backoff policy; all durations in milliseconds. */
export interface BackoffPolicy {
  /** Jitter strategy. Default `full`. */
  jitter: Jitter;
  /** First backoff window. Default 200 ms. */
  initial: number;
  /** Growth of the window per attempt (not used by `decorrelated`, which grows by up to 3×). Default 2. */
  multiplier: number;
  /** Floor applied after jitter: no two attempts closer than this; 0 = no floor. Default 200 ms. */
  min: number;
  /** Cap of the window. Default 300 s. */
  max: number;
  /** Attempts in all; 0 = unlimited (bounded by age/deadline). Default 0 (1 for telemetry QoS 0). */
  maxAttempts: number;
  /** Time from the first attempt after which the delivery expires; null = no age bound. Per kind (docs/spec.md §2). */
  maxAge: number | null;
  /** Absolute time (epoch ms) after which the delivery expires; null = none. Default none. */
  deadline: number | null;
}

/** What a producer may pass: any subset of the fields, durations as ms or strings. */
export interface BackoffPolicyInput {
  jitter?: Jitter;
  initial?: Duration;
  multiplier?: number;
  min?: Duration;
  max?: Duration;
  maxAttempts?: number;
  /** null removes the kind's age bound. */
  maxAge?: Duration | null;
  /** A Date, epoch ms, or an ISO 8601 date string. */
  deadline?: string | number | Date | null;
}

/** Where a delivery stands when the next delay is asked for. */
export interface RetryState {
  /** Attempts made so far (≥ 1). */
  attempts: number;
  /** The previous wait in ms, or null before the first retry (used by `decorrelated`). */
  previousDelay: number | null;
  /** When the first attempt started (epoch ms). */
  firstAttemptAt: number;
  /** Now (epoch ms): in a workflow, workflow time. */
  now: number;
}

export type RetryDecision =
  /** Wait `delay` ms, then attempt again; `hinted` when a server hint set the wait. */
  { retry: true; delay: number; hinted: boolean } | { retry: false; outcome: 'expired' | 'exhausted'; reason: string };
