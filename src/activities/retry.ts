import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ErrorClass } from '../classify/types';
import { attemptError } from '../delivery/attempt-error';
import { expiresAt } from '../delivery/summary';
import type { AttemptError, AttemptRecord, Delivery } from '../delivery/types';
import type { RetryBudget } from '../endpoints/budget';
import { nextDelay } from '../policy/backoff';
import { FAILURE_TYPES } from '../classify/classify';
import { savedHeartbeat } from '../temporal/sdk-adapter';
import { activityClock, attemptFailure, lostAttempt, type AttemptFailureDetails, type AttemptResult } from './deliver';
import type { EndpointAdmission } from './admission';
import { heldUntil, passLimits, WAITING_TYPE, type LimitsPassed } from './limits';
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
   * The endpoint's limits hold the next attempt back (activities/limits.ts), after the budget let it go: the
   * budget is not asked again; the rate's slot reserved for it, if any (epoch ms); how many times the breaker
   * held it (its waits grow as its backoff would). Absent: not held.
   */
  limitsHold?: { reservedAt: number | null; holds?: number } | null;
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

export { WAITING_TYPE } from './limits';

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
  /** The worker's per-endpoint limits over every attempt (activities/admission.ts); none: not limited. */
  admission?: EndpointAdmission | null;
  /** Told of each delivery whose retrying gave up, expired or exhausted (an endpoint's recording counts them). */
  ended?: (endpoint: string, outcome: 'expired' | 'exhausted', at: number) => void;
  /** Told of each retry as it goes out: how late against its planned time (`plannedAt`). A replay of the endpoint's outages runs as late. */
  retried?: (endpoint: string, lateMs: number, plannedAt: number) => void;
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
  const gaveUp = (endpoint: string, at: number, end: RetryEnd & { end: 'expired' | 'exhausted' }): RetryEnd => {
    deps.ended?.(endpoint, end.end, at);
    return end;
  };
  return {
    async retryDelivery(input: RetryInput): Promise<RetryEnd> {
      const { delivery, agedFrom } = input;
      const context = Context.current();
      const carried = savedHeartbeat<RetryProgress>(context.info);
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
        if (!decision.retry)
          return gaveUp(delivery.endpoint, ended, {
            end: decision.outcome,
            progress,
            reason: `${decision.reason}; last error: ${result.reason}`,
          });

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
        return gaveUp(delivery.endpoint, t, {
          end: 'expired',
          progress,
          reason: `attempt ${progress.attempts + 1} could not start before the delivery's ${expiryName(delivery, expiry)} (last error: ${progress.lastError.reason})`,
        });
      }

      if (deps.budget && !progress.limitsHold && !(firstRun && input.skipBudget)) {
        const share = deps.share?.(delivery.endpoint) ?? 1;
        const reserved = progress.reservedAt !== null && progress.reservedAt - t <= ON_TIME_MS;
        // a slot in the queue (in order: no herd), then the strict bound on what goes out now
        const admitted = deps.budget.ask(delivery.endpoint, t, share, reserved, expiry ?? undefined);
        if (!admitted.now) {
          deps.heldBack?.(delivery.endpoint);
          progress.heldBack++;
          // no slot before the delivery expires: it ends now rather than sleep in vain (the slot stays free)
          if (expiry !== null && admitted.at >= expiry) {
            return gaveUp(delivery.endpoint, t, {
              end: 'expired',
              progress,
              reason: `the retry budget of ${delivery.endpoint} has no slot for attempt ${progress.attempts + 1} before the delivery's ${expiryName(delivery, expiry)} (last error: ${progress.lastError.reason})`,
            });
          }
          progress.reservedAt = admitted.at;
          progress.nextAttemptAt = admitted.at;
          save();
          throw waiting(admitted.at - t, `the retry budget of ${delivery.endpoint} holds attempt ${progress.attempts + 1} back`, progress);
        }
      }
      progress.reservedAt = null;

      const limits = await retryLimits(deps.admission, input, progress, { now: t, expiry, random, signal: context.cancellationSignal });
      if ('end' in limits) return limits.end === 'expired' ? gaveUp(delivery.endpoint, t, { ...limits, end: 'expired' }) : limits;
      if ('wait' in limits) {
        save();
        throw limits.wait;
      }

      progress.attempts++;
      const sentAt = now();
      // by its planned time: a replay asks how late a retry planned then went (a retry-now's lies ahead: not late)
      const plannedAt = Math.min(progress.nextAttemptAt, sentAt);
      deps.retried?.(delivery.endpoint, sentAt - plannedAt, plannedAt);
      // saved before it goes out: if this worker dies with it, the next attempt of the activity counts it
      progress.inFlight = { attempt: progress.attempts, startedAt: sentAt };
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
      } finally {
        limits.go.release(now() - sentAt);
      }
      progress.inFlight = null;
      return concluded(sentAt, now(), result);
    },
  };
}

/**
 * The endpoint's limits and breaker before a retry (activities/limits.ts): it goes (with the release to call
 * when it has ended), or waits on the server for its room or its own backoff when held (the failure to throw,
 * `progress` already moved on), or ends expired when neither comes before the delivery's max age or deadline.
 */
async function retryLimits(
  admission: EndpointAdmission | null | undefined,
  input: RetryInput,
  progress: RetryProgress,
  at: { now: number; expiry: number | null; random: () => number; signal: AbortSignal },
): Promise<{ go: Extract<LimitsPassed, { go: true }> } | { wait: ApplicationFailure } | (RetryEnd & { end: 'expired' | 'rejected' })> {
  const { delivery, agedFrom } = input;
  const holds = progress.limitsHold?.holds ?? 0;
  const holdUntil = () =>
    heldUntil(
      delivery,
      { attempts: progress.attempts + holds + 1, previousDelay: progress.previousDelay, agedFrom, now: at.now },
      at.random,
    );
  const reservedAt = progress.limitsHold?.reservedAt ?? null;
  const passed = await passLimits(admission, delivery, { reservedAt, expiry: at.expiry, now: at.now, holdUntil, signal: at.signal });
  if (passed.go) {
    progress.limitsHold = null;
    return { go: passed };
  }
  const next = `attempt ${progress.attempts + 1}`;
  if (passed.disabled)
    return { end: 'rejected', progress, reason: `${passed.words} (${next} was not sent; redrive it once the endpoint is enabled)` };
  if (passed.expired) {
    const until = at.expiry === null ? 'expires' : `'s ${expiryName(delivery, at.expiry)}`;
    const reason = `${passed.words}: ${next} has no room before the delivery${until} (last error: ${progress.lastError.reason})`;
    return { end: 'expired', progress, reason };
  }
  Object.assign(progress, {
    limitsHold: { reservedAt: passed.reservedAt, holds: holds + (passed.held ? 1 : 0) },
    nextAttemptAt: passed.at,
  });
  return { wait: waiting(passed.at - at.now, `${passed.words} (${next})`, progress) };
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

/** The details of an attempt a shutting-down worker handed back (activities/deliver.ts), or null for any other error. */
function handedBackDetails(err: unknown): AttemptFailureDetails | null {
  if (!(err instanceof ApplicationFailure) || err.type !== FAILURE_TYPES.connection) return null;
  return (err.details?.[0] as AttemptFailureDetails | undefined) ?? null;
}

function expiryName(delivery: Delivery, expiry: number): string {
  return delivery.policy.deadline !== null && expiry === delivery.policy.deadline ? 'deadline' : 'max age';
}
