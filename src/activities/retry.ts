import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ErrorClass } from '../classify/types';
import { attemptError } from '../delivery/attempt-error';
import { expiresAt } from '../delivery/summary';
import type { AttemptError, AttemptRecord, Delivery } from '../delivery/types';
import type { RetryBudget } from '../endpoints/budget';
import { nextDelay } from '../policy/backoff';
import { FAILURE_TYPES } from '../classify/classify';
import { activityClock, attemptFailure, type AttemptFailureDetails, type AttemptResult } from './deliver';
import { SUBMISSION_UNCHECKED, type SubmissionCheck } from './submission-check';

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
   * The attempt being sent, saved (heartbeated) before it goes out: an attempt of this activity that finds
   * it was lost with its worker (killed, or shut down mid-attempt), so it is counted all the same.
   */
  inFlight?: { attempt: number; startedAt: number } | null;
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
  | { end: 'rejected' | 'expired' | 'exhausted'; progress: RetryProgress; reason: string }
  | { end: 'class-changed'; progress: RetryProgress };

/** Failure type of an attempt of `retryDelivery` that only waits: for its planned time, or for its slot in the retry budget. */
export const WAITING_TYPE = 'DeliveryWaiting';

const ATTEMPT_LOG_SIZE = 20;
/** An attempt that starts this close to its planned time goes out (server timers fire a little early or late). */
const ON_TIME_MS = 50;

export interface RetryDeps {
  attempt: (delivery: Delivery, attempt: number, clock?: () => number) => Promise<AttemptResult>;
  /** The retry budget of this worker; none: retries are not held back. */
  budget?: RetryBudget | null;
  /** This worker's part of an endpoint's budget (1/N with N workers retrying to it). */
  share?: (endpoint: string) => number;
  /** Told of each retry the budget held back. */
  heldBack?: (endpoint: string) => void;
  /** Asked again before an attempt when the last one could not make the submission check (activities/submission-check.ts). */
  checkSubmission?: SubmissionCheck;
  /** Default: Temporal's clock (activityClock). */
  now?: () => number;
  random?: () => number;
}

/**
 * The retries of one delivery, run by Temporal's own activity retries: each attempt of this activity
 * sends at most one message. It waits for the planned time and for a slot in the endpoint's retry
 * budget by failing with `nextRetryDelay`, which costs no history event; it ends (returns) only with an
 * outcome, or when the error class changes.
 */
export function createRetryActivities(deps: RetryDeps) {
  const random = deps.random ?? Math.random;
  return {
    async retryDelivery(input: RetryInput): Promise<RetryEnd> {
      const { delivery, agedFrom } = input;
      const context = Context.current();
      const carried = context.info.heartbeatDetails as RetryProgress | undefined;
      // the first attempt of this activity starts from the workflow's progress; later ones from the last heartbeat
      const progress: RetryProgress = carried ?? input.progress;
      const firstRun = carried === undefined;
      const save = () => context.heartbeat(progress);
      // a retry of this activity starts at its planned time or after, never before
      const now = deps.now ?? activityClock(context.info.attempt > 1 ? progress.nextAttemptAt : undefined);

      /** The delivery after an attempt: an outcome (returned), or the next wait (thrown as the activity's failure). */
      const concluded = (startedAt: number, ended: number, result: AttemptResult): RetryEnd => {
        progress.lastAttemptAt = ended;
        progress.attemptLog = [
          ...progress.attemptLog,
          {
            attempt: progress.attempts,
            startedAt: new Date(startedAt).toISOString(),
            durationMs: Math.round(result.durationMs),
            code: result.code,
            ok: result.ok,
          },
        ].slice(-ATTEMPT_LOG_SIZE);
        if (result.ok) return { end: 'delivered', progress, code: result.code, reason: result.reason };

        progress.lastError = attemptError(result, progress.attempts, ended);
        if (!result.retryable) return { end: 'rejected', progress, reason: result.reason };
        const decision = nextDelay(
          delivery.policy,
          { attempts: progress.attempts, previousDelay: progress.previousDelay, firstAttemptAt: agedFrom, now: ended },
          random,
          result.retryAfterMs,
        );
        if (!decision.retry) return { end: decision.outcome, progress, reason: `${decision.reason}; last error: ${result.reason}` };

        progress.previousDelay = decision.delay;
        progress.nextAttemptAt = ended + decision.delay;
        progress.hinted = decision.hinted;
        if (result.class !== input.searchedClass) return { end: 'class-changed', progress };
        save();
        // the failure as the UI shows it on the pending activity: its class's type, its reason, and when the next attempt comes
        throw attemptFailure(result, Math.max(1, decision.delay), progress);
      };

      const t = now();
      const expiry = expiresAt(delivery, agedFrom);
      // the last attempt never came back: its worker was lost mid-attempt. It counts, as a connection failure
      if (progress.inFlight) {
        const lost = progress.inFlight;
        progress.inFlight = null;
        return concluded(lost.startedAt, t, lostAttempt(t - lost.startedAt));
      }
      if (progress.nextAttemptAt - t > ON_TIME_MS)
        throw waiting(progress.nextAttemptAt - t, `waiting for attempt ${progress.attempts + 1}`, progress);
      if (expiry !== null && t >= expiry) {
        return {
          end: 'expired',
          progress,
          reason: `attempt ${progress.attempts + 1} could not start before the delivery's ${expiryName(delivery, expiry)} (last error: ${progress.lastError.reason})`,
        };
      }

      if (deps.budget && !(firstRun && input.skipBudget)) {
        const share = deps.share?.(delivery.endpoint) ?? 1;
        const reserved = progress.reservedAt !== null && progress.reservedAt - t <= ON_TIME_MS;
        // a slot in the queue (in order: no herd), then the strict bound on what goes out now
        const grant = reserved ? ({ now: true } as const) : deps.budget.acquire(delivery.endpoint, t, share, expiry ?? undefined);
        const admitted = grant.now ? deps.budget.admit(delivery.endpoint, t, share) : grant;
        if (!admitted.now) {
          deps.heldBack?.(delivery.endpoint);
          progress.heldBack++;
          // no slot before the delivery expires: it ends now rather than sleep in vain (the slot stays free)
          if (expiry !== null && admitted.at >= expiry) {
            return {
              end: 'expired',
              progress,
              reason: `the retry budget of ${delivery.endpoint} has no slot for attempt ${progress.attempts + 1} before the delivery's ${expiryName(delivery, expiry)} (last error: ${progress.lastError.reason})`,
            };
          }
          progress.reservedAt = admitted.at;
          progress.nextAttemptAt = admitted.at;
          save();
          throw waiting(admitted.at - t, `the retry budget of ${delivery.endpoint} holds attempt ${progress.attempts + 1} back`, progress);
        }
      }
      progress.reservedAt = null;

      progress.attempts++;
      // saved before it goes out: if this worker dies with it, the next attempt of the activity counts it
      progress.inFlight = { attempt: progress.attempts, startedAt: t };
      save();
      let result: AttemptResult;
      try {
        const unchecked = progress.lastError.code === SUBMISSION_UNCHECKED ? await deps.checkSubmission?.() : null;
        result = unchecked ? { ok: false, ...unchecked } : await deps.attempt(delivery, progress.attempts, now);
      } catch (err) {
        // a worker shutting down hands the attempt back (activities/deliver.ts): a connection failure
        const handed = handedBackDetails(err);
        if (!handed) throw err;
        result = { ok: false, ...handed };
      }
      progress.inFlight = null;
      return concluded(t, now(), result);
    },
  };
}

function waiting(delayMs: number, message: string, progress: RetryProgress): ApplicationFailure {
  return ApplicationFailure.create({
    type: WAITING_TYPE,
    message: `${message}; last error: ${progress.lastError.reason}`,
    nextRetryDelay: Math.max(1, Math.round(delayMs)),
    // a workflow that stopped the retrying (pause, retry now) learns from here where it stands
    details: [null, progress],
  });
}

/** An attempt lost with its worker: it may have arrived (the message id lets the receiver tell). */
function lostAttempt(durationMs: number): AttemptResult {
  return {
    ok: false,
    class: 'connection',
    retryable: true,
    code: 'worker-lost',
    reason: 'the worker sending the attempt was lost before it answered; the message may have arrived, and is resent with its message id',
    durationMs,
  };
}

/** The details of an attempt a shutting-down worker handed back (activities/deliver.ts), or null for any other error. */
function handedBackDetails(err: unknown): AttemptFailureDetails | null {
  if (!(err instanceof ApplicationFailure) || err.type !== FAILURE_TYPES.connection) return null;
  return (err.details?.[0] as AttemptFailureDetails | undefined) ?? null;
}

function expiryName(delivery: Delivery, expiry: number): string {
  return delivery.policy.deadline !== null && expiry === delivery.policy.deadline ? 'deadline' : 'max age';
}
