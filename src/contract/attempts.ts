import type { Classification, ErrorClass } from '../classify/types';
import type { AttemptError, AttemptRecord, Delivery, Outcome } from '../delivery/types';

/* A delivery's attempts as its activities report them to the workflow (docs/retries.md). */

/** What a successful attempt returns to the workflow. */
export interface AttemptSuccess {
  code: string;
  reason: string;
  durationMs: number;
}

/** Carried in a failed attempt's ApplicationFailure details, for the workflow to decide. */
export interface AttemptFailureDetails extends Classification {
  durationMs: number;
}

/** How the workflow runs an attempt of `sendAttempt` (an attempt made by the workflow). */
export interface SendOptions {
  /**
   * The activity may wait on the server for room at the endpoint (its retry policy retries WAITING_TYPE
   * only): a run from before the endpoint limits does not pass it, and its attempts are not held.
   */
  limited?: boolean;
}

/**
 * A delivery's retrying, as it goes from attempt to attempt of the `retryDelivery` activity. It travels
 * in the activity's heartbeat details, which Temporal hands to the next attempt: the retries themselves
 * add nothing to the delivery's history (docs/retries.md).
 */
export interface RetryProgress {
  /** Attempts sent so far, the first one included: the `delivery-attempt` header of the next is one more. */
  attempts: number;
  previousDelay: number | null;
  lastError: AttemptError;
  lastAttemptAt: number;
  attemptLog: AttemptRecord[];
  /** When the next attempt is planned (epoch ms). */
  nextAttemptAt: number;
  /** Whether the wait until nextAttemptAt is a server's hint (Retry-After). */
  hinted: boolean;
  /** A slot the endpoint's retry budget reserved for the next attempt (epoch ms); the attempt then goes out without asking again. */
  reservedAt: number | null;
  /** Retries the budget held back so far. */
  heldBack: number;
  /**
   * The endpoint's limits (docs/endpoint-health.md) hold the next attempt back, after the budget let it go: the
   * budget is not asked again; the rate's slot reserved for it, if any (epoch ms); how many times the breaker
   * held it (its waits grow as its backoff would). Absent: not held.
   */
  limitsHold?: { reservedAt: number | null; holds?: number } | null;
  /**
   * The attempt being sent, saved (heartbeated) before it goes out: an attempt of this activity that finds
   * it was lost with its worker (killed, or shut down mid-attempt), so it is counted all the same.
   */
  inFlight?: { attempt: number; startedAt: number } | null;
  /** The run of the retrying activity (Temporal's activity attempt) this progress is from. */
  run?: number;
  /**
   * Runs of the retrying activity that left no save on the server (one that overran its time on a stalled worker,
   * its heartbeat still queued; or one lost before its first save): each may have sent an attempt that the next run
   * sends again with the same number. At-least-once, as the receiver's deduplication by message id expects;
   * counted so that it shows.
   */
  unseenRuns?: number;
}

export interface RetryInput {
  delivery: Delivery;
  progress: RetryProgress;
  /** When the first attempt started, moved on by the time spent paused (the max age does not run while paused). */
  agedFrom: number;
  /**
   * The class the delivery's `LastErrorClass` search attribute says: a failure of another class ends the
   * activity so the workflow can say so in the UI's list, then goes on with a new one.
   */
  searchedClass: ErrorClass;
  /** Skip the budget for the next attempt: an operator asked for it (retry now). */
  skipBudget?: boolean;
}

/** How the retrying ended; the workflow finishes the delivery, or records the new class and goes on. */
export type RetryEnd =
  | { end: 'delivered'; progress: RetryProgress; code: string; reason: string }
  /** `dropped`: never in practice (a message sent once is not retried), but the rule after a failure has it. */
  | { end: 'rejected' | 'dropped' | 'expired' | 'exhausted'; progress: RetryProgress; reason: string }
  | { end: 'class-changed'; progress: RetryProgress };

/** A first attempt that ended the delivery unsent: the outcome and why. */
export interface UnsentDetails {
  outcome: Extract<Outcome, 'expired' | 'rejected' | 'dropped'>;
  reason: string;
}
