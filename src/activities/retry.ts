import { Context, type ApplicationFailure } from '@temporalio/activity';
import { afterFailure, logAttempt, verdictOf } from '../delivery/after-failure';
import { attemptError } from '../delivery/attempt-error';
import { heldUntil, limitsVerdict } from '../delivery/limits-verdict';
import { expiresAt, expiryName } from '../delivery/summary';
import type { Delivery } from '../delivery/types';
import type { RetryBudget } from '../endpoints/budget';
import { FAILURE_TYPES } from '../classify/classify';
import { attemptFailure, attemptFailureDetails, type RetryEnd, type RetryInput, type RetryProgress, waitingFailure } from '../contract';
import { savedHeartbeat } from '../temporal/sdk-adapter';
import { activityClock, lostAttempt, type AttemptResult } from './deliver';
import type { EndpointAdmission } from '../worker-services/admission';
import { passLimits, type LimitsPassed } from '../worker-services/limits';
import { SUBMISSION_UNCHECKED, type SubmissionCheck } from '../worker-services/submission-check';
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
  /**
   * The worker's per-endpoint limits over every attempt (docs/endpoint-health.md, "Limits: every attempt, per
   * endpoint"); none: not limited.
   */
  admission?: EndpointAdmission | null;
  /** Told of each delivery whose retrying gave up, expired or exhausted (an endpoint's recording counts them). */
  ended?: (endpoint: string, outcome: 'expired' | 'exhausted', at: number) => void;
  /** Told of each retry as it goes out: how late against its planned time (`plannedAt`). A replay of the endpoint's outages runs as late. */
  retried?: (endpoint: string, lateMs: number, plannedAt: number) => void;
  /** Asked again before an attempt when the last one could not make the submission check (submissionCheck). */
  checkSubmission?: SubmissionCheck;
  /** Default: Temporal's clock (activityClock). */
  now?: () => number;
  random?: () => number;
}

/** One attempt of the retrying activity: what it was given, where it stands, and how it keeps it. */
interface RetryRun {
  deps: RetryDeps;
  input: RetryInput;
  /** From the workflow on the activity's first attempt, from the last heartbeat on later ones; moved on in place. */
  progress: RetryProgress;
  /** Heartbeats the progress: the next attempt of the activity, and a workflow that stops it, start from there. */
  save: () => void;
  now: () => number;
  random: () => number;
  /** When the delivery expires (its max age or deadline), or null. */
  expiry: number | null;
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
      const context = Context.current();
      const carried = savedHeartbeat<RetryProgress>(context.info);
      // the first attempt of this activity starts from the workflow's progress; later ones from the last heartbeat
      const progress: RetryProgress = carried ?? input.progress;
      // the first run of one given a planned time ahead only waits for it, saving nothing (no heartbeat of its own)
      const firstWaited = input.progress.nextAttemptAt - context.info.scheduledTimestampMs > ON_TIME_MS;
      countUnseenRuns(progress, carried, context.info.attempt, firstWaited);
      progress.run = context.info.attempt;
      // a retry of this activity starts at its planned time or after, never before
      const now = deps.now ?? activityClock(context.info.attempt > 1 ? progress.nextAttemptAt : undefined);
      const expiry = expiresAt(input.delivery, input.agedFrom);
      // a copy: the SDK encodes it later, and the progress moves on meanwhile
      const save = () => context.heartbeat({ ...progress });
      const run: RetryRun = { deps, input, progress, save, now, random, expiry };
      const t = now();
      // the last attempt never came back: its worker was lost mid-attempt. It counts, as a connection failure
      if (progress.inFlight) {
        const lost = progress.inFlight;
        progress.inFlight = null;
        return concluded(run, lost.startedAt, t, lostAttempt(t - lost.startedAt));
      }
      if (progress.nextAttemptAt - t > ON_TIME_MS)
        throw waiting(progress.nextAttemptAt - t, `waiting for attempt ${progress.attempts + 1}`, progress);
      if (expiry !== null && t >= expiry) {
        const why = `attempt ${progress.attempts + 1} could not start before the delivery's ${expiryName(input.delivery, expiry)}`;
        return gaveUp(run, t, { end: 'expired', progress, reason: `${why} (last error: ${progress.lastError.reason})` });
      }
      // not asked again for an attempt the limits hold (it let it go), nor on a retry-now (this activity's first attempt)
      const budgetEnd = progress.limitsHold || (carried === undefined && input.skipBudget) ? null : askBudget(run, t);
      if (budgetEnd) return budgetEnd;
      progress.reservedAt = null;

      const limits = await retryLimits(run, t, context.cancellationSignal);
      if ('end' in limits) return limits.end === 'expired' ? gaveUp(run, t, { ...limits, end: 'expired' }) : limits;
      if ('wait' in limits) {
        run.save();
        throw limits.wait;
      }
      return sendRetry(run, limits.go);
    },
  };
}

/**
 * Every run of the activity that goes on to a next one saves its progress first, marked with its run number
 * (`run`), but a first run that only waits for its planned time: a run that finds an older mark, or none after
 * those, follows runs whose saves were lost (each may have sent an attempt).
 */
function countUnseenRuns(progress: RetryProgress, carried: RetryProgress | undefined, run: number, firstWaited: boolean): void {
  // a save from before runs were marked counts as the last run's
  const lastSaved = carried ? (carried.run ?? run - 1) : firstWaited ? 1 : 0;
  const unseen = run - 1 - lastSaved;
  if (unseen > 0) progress.unseenRuns = (progress.unseenRuns ?? 0) + unseen;
}

/** A delivery whose retrying gave up: the endpoint's recording hears of it. */
function gaveUp(run: RetryRun, at: number, end: RetryEnd & { end: 'expired' | 'exhausted' }): RetryEnd {
  run.deps.ended?.(run.input.delivery.endpoint, end.end, at);
  return end;
}

/**
 * The endpoint's retry budget before a retry: null when it goes now; the delivery's end when the budget has
 * no slot before it expires (the slot stays free); otherwise the wait for its slot, thrown.
 */
function askBudget(run: RetryRun, t: number): RetryEnd | null {
  const { deps, input, progress, expiry } = run;
  const { endpoint } = input.delivery;
  if (!deps.budget) return null;
  const share = deps.share?.(endpoint) ?? 1;
  const reserved = progress.reservedAt !== null && progress.reservedAt - t <= ON_TIME_MS;
  // a slot in the queue (in order: no herd), then the strict bound on what goes out now
  const admitted = deps.budget.ask(endpoint, t, share, reserved, expiry ?? undefined);
  if (admitted.now) return null;
  deps.heldBack?.(endpoint);
  progress.heldBack++;
  const next = `attempt ${progress.attempts + 1}`;
  // no slot before the delivery expires: it ends now rather than sleep in vain
  if (expiry !== null && admitted.at >= expiry) {
    const why = `the retry budget of ${endpoint} has no slot for ${next} before the delivery's ${expiryName(input.delivery, expiry)}`;
    return gaveUp(run, t, { end: 'expired', progress, reason: `${why} (last error: ${progress.lastError.reason})` });
  }
  progress.reservedAt = admitted.at;
  progress.nextAttemptAt = admitted.at;
  run.save();
  throw waiting(admitted.at - t, `the retry budget of ${endpoint} holds ${next} back`, progress);
}

/** Sends the next attempt, its limits passed, and concludes from what came back. */
async function sendRetry(run: RetryRun, go: Extract<LimitsPassed, { go: true }>): Promise<RetryEnd> {
  const { deps, input, progress, now } = run;
  const { delivery } = input;
  progress.attempts++;
  const sentAt = now();
  // by its planned time: a replay asks how late a retry planned then went (a retry-now's lies ahead: not late)
  const plannedAt = Math.min(progress.nextAttemptAt, sentAt);
  deps.retried?.(delivery.endpoint, sentAt - plannedAt, plannedAt);
  // saved before it goes out: if this worker dies with it, the next attempt of the activity counts it
  progress.inFlight = { attempt: progress.attempts, startedAt: sentAt };
  run.save();
  let result: AttemptResult;
  try {
    const unchecked = progress.lastError.code === SUBMISSION_UNCHECKED ? await deps.checkSubmission?.() : null;
    result = unchecked ? { ok: false, ...unchecked } : await deps.attempt(delivery, progress.attempts, now);
  } catch (err) {
    // a worker shutting down hands the attempt back (handedBack): a connection failure
    const handed = attemptFailureDetails(err, [FAILURE_TYPES.connection]);
    if (!handed) throw err;
    result = { ok: false, ...handed };
  } finally {
    go.release(now() - sentAt);
  }
  progress.inFlight = null;
  return concluded(run, sentAt, now(), result);
}

/**
 * The delivery after an attempt: an outcome (returned), or the next wait (thrown as the activity's failure),
 * by the rule after a failed attempt that the workflow's own attempts follow too (afterFailure).
 */
function concluded(run: RetryRun, startedAt: number, ended: number, result: AttemptResult): RetryEnd {
  const { input, progress } = run;
  progress.lastAttemptAt = ended;
  const { durationMs, code, ok } = result;
  progress.attemptLog = logAttempt(progress.attemptLog, {
    attempt: progress.attempts,
    startedAt,
    durationMs,
    code,
    ok,
    ...verdictOf(result),
  });
  if (result.ok) return { end: 'delivered', progress, code: result.code, reason: result.reason };

  progress.lastError = attemptError(result, progress.attempts, ended);
  const { attempts, previousDelay } = progress;
  const next = afterFailure(input.delivery, result, { attempts, previousDelay, agedFrom: input.agedFrom, at: ended }, run.random);
  if (next.end === 'expired' || next.end === 'exhausted') return gaveUp(run, ended, { end: next.end, progress, reason: next.reason });
  if (next.end) return { end: next.end, progress, reason: next.reason };

  progress.previousDelay = next.delay;
  progress.nextAttemptAt = ended + next.delay;
  progress.hinted = next.hinted;
  if (result.class !== input.searchedClass) return { end: 'class-changed', progress };
  run.save();
  // the failure as the UI shows it on the pending activity: its class's type, its reason, and when the next attempt comes
  throw attemptFailure(result, { nextRetryDelay: Math.max(1, next.delay), progress });
}

/**
 * The endpoint's limits and breaker before a retry (passLimits): it goes (with the release to call
 * when it has ended), or waits on the server for its room or its own backoff when held (the failure to throw,
 * `progress` already moved on), or ends when neither comes before the delivery's max age or deadline, or
 * the endpoint is disabled (limitsVerdict, as for the first attempt).
 */
async function retryLimits(
  run: RetryRun,
  now: number,
  signal: AbortSignal,
): Promise<
  { go: Extract<LimitsPassed, { go: true }> } | { wait: ApplicationFailure } | (RetryEnd & { end: 'expired' | 'rejected' | 'dropped' })
> {
  const { deps, input, progress, expiry } = run;
  const { delivery, agedFrom } = input;
  const holds = progress.limitsHold?.holds ?? 0;
  const { attempts, previousDelay } = progress;
  const holdUntil = () => heldUntil(delivery, { attempts, holds, previousDelay, agedFrom, now }, run.random);
  const reservedAt = progress.limitsHold?.reservedAt ?? null;
  const passed = await passLimits(deps.admission, delivery, { reservedAt, expiry, now, holdUntil, signal });
  if (passed.go) {
    progress.limitsHold = null;
    return { go: passed };
  }
  const verdict = limitsVerdict(delivery, passed, {
    number: attempts + 1,
    holds,
    ...(expiry !== null && { expiry: expiryName(delivery, expiry) }),
    lastError: progress.lastError.reason,
  });
  if (verdict.end) return { end: verdict.end, progress, reason: verdict.reason };
  Object.assign(progress, { limitsHold: verdict.hold, nextAttemptAt: verdict.at });
  return { wait: waiting(verdict.at - now, verdict.words, progress) };
}

/** A wait on the server; a workflow that stopped the retrying (pause, retry now) learns from its progress where it stands. */
function waiting(delayMs: number, message: string, progress: RetryProgress): ApplicationFailure {
  return waitingFailure(delayMs, `${message}; last error: ${progress.lastError.reason}`, progress);
}
