import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, AttemptFailureDetails } from '../activities';
import type { RetryEnd, RetryInput, RetryProgress } from '../activities/retry';
import type { ErrorClass } from '../classify/types';
import { expiresAt, humanDuration, waitingSummary } from '../delivery/summary';
import {
  isMqttTarget,
  type AttemptError,
  type AttemptRecord,
  type Delivery,
  type DeliveryResult,
  type DeliveryStateName,
  type DeliveryStatus,
  type Outcome,
} from '../delivery/types';
import { nextDelay } from '../policy/backoff';
import { ATTEMPT_MARGIN_MS, failureOf } from './failures';
import {
  Attempts,
  DeliveryState,
  LastErrorClass,
  pauseUpdate,
  resumeUpdate,
  retryNowUpdate,
  statusQuery,
} from './definitions';

/** What a run hands to the next when it continues as new; absent on the first run. */
export interface CarriedState {
  run: number;
  attempts: number;
  firstAttemptAt: number | null;
  lastAttemptAt: number | null;
  /** When the next attempt is planned (epoch ms); null = at once. */
  nextAttemptAt: number | null;
  previousDelay: number | null;
  lastError: AttemptError | null;
  attemptLog: AttemptRecord[];
  /** Time spent paused so far: it does not count towards the max age. */
  pausedMs: number;
  pause: { reason: string; since: number } | null;
}

export interface DeliveryWorkflowInput {
  delivery: Delivery;
  carried?: CarriedState;
  /** Continue as new once the history has this many events (default 4,000; Temporal warns at 10,240). */
  historyLimit?: number;
}

const ATTEMPT_LOG_SIZE = 20;
const DEFAULT_HISTORY_LIMIT = 4_000;
/**
 * Retries run as Temporal's own activity retries (activities/retry.ts): no history event per retry.
 * Deliveries recorded before kept a timer and an activity per retry: their recorded part replays that way,
 * and at their next failed attempt they switch to this path, carrying their state.
 */
export const SERVER_SIDE_RETRIES = 'server-side-retries';
/**
 * Pause, retry now and cancel answer with the attempts the endpoint saw: the retrying activity runs out of
 * reach of the delivery's cancellation, so the workflow reads its progress before stopping it, and the
 * updates answer once it has stopped. Checked at each such control while retrying (a delivery without one
 * keeps the history it had); controls recorded before it replay as they were.
 */
export const TRUE_ATTEMPT_COUNTS = 'true-attempt-counts';

/**
 * One delivery: the first attempt is an activity; the retries are one activity that Temporal retries, its
 * waits drawn from the policy and held on the server (activities/retry.ts), until an outcome of SPEC §5. Operators read it with the
 * `status` query and steer it with the `retryNow`, `pause` and `resume` updates, or cancel it.
 */
export async function deliveryWorkflow(input: DeliveryWorkflowInput): Promise<DeliveryResult> {
  const { delivery } = input;
  const carried = input.carried;
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;

  let state: DeliveryStateName = carried ? (carried.pause ? 'paused' : 'waiting') : 'pending';
  let summary = 'starting';
  let attempts = carried?.attempts ?? 0;
  let firstAttemptAt = carried?.firstAttemptAt ?? null;
  let lastAttemptAt = carried?.lastAttemptAt ?? null;
  let nextAttemptAt = carried?.nextAttemptAt ?? null;
  let previousDelay = carried?.previousDelay ?? null;
  let lastError = carried?.lastError ?? null;
  const attemptLog: AttemptRecord[] = [...(carried?.attemptLog ?? [])];
  let pausedMs = carried?.pausedMs ?? 0;
  let pause = carried?.pause ?? null;
  let retryRequested = false;
  const run = carried?.run ?? 1;
  const root = CancellationScope.current();
  // a retrying activity is running, and how many have stopped so far (a control waits for the next)
  let retrying = false;
  let stops = 0;
  // TRUE_ATTEMPT_COUNTS: asked at a control while retrying, so that a delivery without one records no marker
  let counting = false;
  const countTruly = () => (counting = patched(TRUE_ATTEMPT_COUNTS) || counting);
  // what LastErrorClass says in the UI (carried over by continue-as-new with the other attributes)
  let searchedClass = lastError?.class;

  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  const status = (): DeliveryStatus => ({
    deliveryId: delivery.deliveryId,
    messageId: delivery.messageId,
    kind: delivery.kind,
    qos: delivery.qos,
    tenant: delivery.tenant,
    device: delivery.device,
    endpoint: delivery.endpoint,
    state,
    attempts,
    firstAttemptAt: iso(firstAttemptAt),
    lastAttemptAt: iso(lastAttemptAt),
    nextAttemptAt: pause ? null : iso(nextAttemptAt),
    lastError,
    attemptLog: [...attemptLog],
    summary,
    pause: pause && { reason: pause.reason, since: new Date(pause.since).toISOString() },
  });
  const describe = (words: string) => {
    summary = words;
    setCurrentDetails(words);
  };
  const setState = (next: DeliveryStateName, words: string) => {
    const changed = next !== state;
    state = next;
    describe(words);
    // visible in the UI's list; 'attempting' is too short-lived to be worth an event
    if (changed && next !== 'attempting') upsertSearchAttributes([{ key: DeliveryState, value: next }]);
  };
  /** A control's answer: the status once the retrying activity it stopped has handed over its progress. */
  const answer = (): DeliveryStatus | Promise<DeliveryStatus> => {
    if (!retrying || !countTruly()) return status();
    const before = stops;
    return CancellationScope.nonCancellable(() => condition(() => stops > before || !retrying)).then(status);
  };

  setHandler(statusQuery, status);
  setHandler(
    retryNowUpdate,
    () => {
      retryRequested = true;
      return answer();
    },
    {
      validator: () => {
        if (pause) throw ApplicationFailure.create({ type: 'NotWaiting', message: 'the delivery is paused: resume it first' });
        if (state !== 'waiting') throw ApplicationFailure.create({ type: 'NotWaiting', message: `the delivery is not waiting (it is ${state})` });
      },
    },
  );
  setHandler(
    pauseUpdate,
    (reason: string) => {
      pause = { reason: reason || 'paused by an operator', since: Date.now() };
      if (state === 'waiting') setState('paused', `paused: ${pause.reason}`);
      return answer();
    },
    {
      validator: (_reason: string) => {
        if (pause) throw ApplicationFailure.create({ type: 'AlreadyPaused', message: 'the delivery is already paused' });
      },
    },
  );
  setHandler(
    resumeUpdate,
    () => {
      if (pause) pausedMs += Date.now() - pause.since;
      pause = null;
      return status();
    },
    {
      validator: () => {
        if (!pause) throw ApplicationFailure.create({ type: 'NotPaused', message: 'the delivery is not paused' });
      },
    },
  );

  const record = (entry: AttemptRecord) => {
    attemptLog.push(entry);
    if (attemptLog.length > ATTEMPT_LOG_SIZE) attemptLog.shift();
  };
  const finish = (outcome: Outcome, reason: string): DeliveryResult => {
    state = outcome;
    nextAttemptAt = null;
    describe(`${outcome}: ${reason}`);
    upsertSearchAttributes([
      { key: DeliveryState, value: outcome },
      { key: Attempts, value: attempts },
      ...(lastError && lastError.class !== searchedClass ? [{ key: LastErrorClass, value: lastError.class }] : []),
    ]);
    return {
      deliveryId: delivery.deliveryId,
      messageId: delivery.messageId,
      outcome,
      attempts,
      firstAttemptAt: iso(firstAttemptAt),
      lastAttemptAt: iso(lastAttemptAt),
      lastError,
      reason,
      ...(outcome !== 'delivered' && { message: delivery }),
    };
  };
  /** Waits until the planned attempt time, a retry-now, or the end of a pause; paused time is counted. */
  const waitForTurn = async () => {
    for (;;) {
      if (pause) {
        setState('paused', `paused: ${pause.reason} — attempt ${attempts + 1} waits for resume`);
        await condition(() => pause === null);
        retryRequested = false;
      }
      const remaining = nextAttemptAt === null ? 0 : nextAttemptAt - Date.now();
      if (remaining <= 0 || retryRequested) break;
      const words = lastError
        ? waitingSummary({ delayMs: remaining, code: lastError.code, nextAttempt: attempts + 1, expiresInMs: expiresInMs(), hinted: false })
        : `waiting ${humanDuration(remaining)} — attempt ${attempts + 1} next`;
      setState('waiting', words);
      const interrupted = await condition(() => retryRequested || pause !== null, remaining, { summary: words });
      if (!interrupted) break;
      if (retryRequested) break;
    }
    retryRequested = false;
    nextAttemptAt = null;
  };
  /** A long delivery continues in a fresh run: same id, the message and everything it has learnt. */
  const continueIfLong = async () => {
    const info = workflowInfo();
    if (!info.continueAsNewSuggested && info.historyLength < historyLimit) return;
    await condition(allHandlersFinished);
    await continueAsNew<typeof deliveryWorkflow>({
      delivery,
      historyLimit,
      carried: { run: run + 1, attempts, firstAttemptAt, lastAttemptAt, nextAttemptAt, previousDelay, lastError, attemptLog, pausedMs, pause },
    });
  };
  /** Takes the retrying activity's progress as the delivery's own. */
  const adopt = (p: RetryProgress) => {
    attempts = p.attempts;
    previousDelay = p.previousDelay;
    lastError = p.lastError;
    lastAttemptAt = p.lastAttemptAt;
    attemptLog.splice(0, attemptLog.length, ...p.attemptLog);
    nextAttemptAt = p.nextAttemptAt;
  };
  /**
   * The retries after the first failed attempt, as one activity that Temporal retries (activities/retry.ts):
   * it waits on the server between attempts and adds no history event per retry. The workflow wakes when it
   * ends with an outcome, when the error class changes (to keep LastErrorClass true in the UI's list), or
   * when an operator pauses it or asks to retry now: then it stops the activity and starts another after.
   */
  const retryOnServer = async (hinted: boolean): Promise<DeliveryResult> => {
    const { retryDelivery } = proxyActivities<Activities>({
      startToCloseTimeout: delivery.target.timeout + ATTEMPT_MARGIN_MS,
      // every failure says when to come back (nextRetryDelay). This applies only when the worker running an
      // attempt is lost: the next attempt of the activity comes a second later, counts the lost one, and waits
      retry: { initialInterval: '1s', backoffCoefficient: 1, maximumInterval: '1s' },
      // an attempt in flight finishes before a pause or a retry-now takes over: its outcome is not lost
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      summary: `retries: ${isMqttTarget(delivery.target) ? `PUBLISH ${delivery.endpoint} ${delivery.target.topic}` : `${delivery.target.method} ${delivery.endpoint}`}`,
    });
    const { retryProgress } = proxyLocalActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumAttempts: 3 } });
    // the delivery's cancellation does not reach the retrying activity: the workflow stops it itself
    const shield = new CancellationScope({ cancellable: false });
    /** Before the delivery ends: with true counts, a control waiting for the activity is answered first. */
    const handlersAnswered = async () => {
      if (counting) await condition(allHandlersFinished);
    };
    /**
     * One retrying activity, until it ends or is stopped (pause, retry now, or with true counts the delivery's
     * cancellation); null when stopped without an outcome, its progress adopted.
     */
    const retryUntilStopped = async (input: RetryInput): Promise<RetryEnd | null> => {
      const scope = new CancellationScope({ cancellable: true, parent: shield });
      const running = scope.run(() => retryDelivery(input));
      let stopped = false;
      let seen: RetryProgress | null = null;
      try {
        const stop = shield.run(() => condition(() => pause !== null || retryRequested || root.consideredCancelled));
        const end = await Promise.race([running, stop.then(() => null)]);
        if (end !== null) return end;
        if (root.consideredCancelled && !countTruly()) {
          // as recorded before true counts: the cancellation stops the activity at once, unread
          scope.cancel();
          throw new CancelledFailure('the delivery was cancelled');
        }
        // stopped: read where the retrying stands, then stop it. An attempt in flight finishes first: its
        // outcome comes back as a value, or as a failure that carries the progress
        stopped = true;
        try {
          seen = await shield.run(() => retryProgress(workflowInfo().workflowId));
        } catch {
          // unreadable (no permission to describe, Temporal slow): stop it all the same
          seen = null;
        } finally {
          scope.cancel();
        }
        return await running;
      } catch (err) {
        if (stopped) scope.cancel();
        // an attempt that ended with the stop carries the progress; otherwise what was read before it
        // (which counts an attempt in flight then: it was heartbeated before it was sent)
        const carried = progressOf(err) ?? (stopped ? seen : null);
        if (carried && carried.attempts >= attempts) adopt(carried);
        if (CancellationScope.current().consideredCancelled) {
          // the delivery itself was cancelled: it ends so, whatever the activity ended with
          throw isCancellation(err) ? err : new CancelledFailure('the delivery was cancelled');
        }
        return null;
      }
    };
    let skipBudget = false;
    let wasHinted = hinted;
    for (;;) {
      // class changes, pauses and retry-nows add events
      await continueIfLong();
      if (pause) {
        setState('paused', `paused: ${pause.reason} — attempt ${attempts + 1} waits for resume`);
        await condition(() => pause === null);
        retryRequested = false;
      }
      if (retryRequested) {
        retryRequested = false;
        nextAttemptAt = Date.now();
        // an operator's retry-now goes out at once, past the endpoint's retry budget
        skipBudget = true;
      }
      if (delivery.policy.deadline !== null && Date.now() > delivery.policy.deadline) {
        return finish('expired', `the deadline ${new Date(delivery.policy.deadline).toISOString()} passed while paused`);
      }
      const progress: RetryProgress = {
        attempts,
        previousDelay,
        lastError: lastError!,
        lastAttemptAt: lastAttemptAt!,
        attemptLog: [...attemptLog],
        nextAttemptAt: nextAttemptAt ?? Date.now(),
        hinted: wasHinted,
        reservedAt: null,
        heldBack: 0,
      };
      const remaining = Math.max(0, progress.nextAttemptAt - Date.now());
      setState('waiting', `${waitingSummary({ delayMs: remaining, code: lastError!.code, nextAttempt: attempts + 1, expiresInMs: expiresInMs(), hinted: wasHinted })}; later attempts are retried by Temporal (Pending Activities shows the next)`);

      // the activity is out of the cancellation's reach: one cancelled already is not started (as it was not before)
      if (root.consideredCancelled) throw new CancelledFailure('the delivery was cancelled');
      const input: RetryInput = { delivery, progress, agedFrom: firstAttemptAt! + pausedMs, searchedClass: searchedClass!, skipBudget };
      skipBudget = false;
      retrying = true;
      let end: RetryEnd | null;
      try {
        end = await retryUntilStopped(input);
      } finally {
        retrying = false;
        stops++;
      }
      if (end === null) continue;
      adopt(end.progress);
      wasHinted = end.progress.hinted;
      if (counting && root.consideredCancelled) throw new CancelledFailure('the delivery was cancelled');
      if (end.end === 'delivered') {
        await handlersAnswered();
        return finish('delivered', `${end.reason} on attempt ${attempts}`);
      }
      if (end.end !== 'class-changed') {
        await handlersAnswered();
        return finish(end.end, end.reason);
      }
      // the new class, in the UI's list; then the retrying goes on
      upsertSearchAttributes([
        { key: Attempts, value: attempts },
        { key: LastErrorClass, value: lastError!.class },
      ]);
      searchedClass = lastError!.class;
    }
  };
  const expiresInMs = () => {
    if (firstAttemptAt === null) return null;
    const at = expiresAt(delivery, firstAttemptAt + pausedMs);
    return at === null ? null : at - Date.now();
  };

  try {
    for (;;) {
      await waitForTurn();
      if (delivery.policy.deadline !== null && Date.now() > delivery.policy.deadline) {
        // only a pause can carry a delivery past its deadline: waits never do
        return finish('expired', `the deadline ${new Date(delivery.policy.deadline).toISOString()} passed while paused`);
      }

      attempts++;
      const startedAt = Date.now();
      firstAttemptAt ??= startedAt;
      setState('attempting', `attempt ${attempts} in progress`);
      const { sendAttempt } = proxyActivities<Activities>({
        startToCloseTimeout: delivery.target.timeout + ATTEMPT_MARGIN_MS,
        // the workflow does the retrying: with jitter, hints, bounds and visibility
        retry: { maximumAttempts: 1 },
        summary: `attempt ${attempts}: ${isMqttTarget(delivery.target) ? `PUBLISH ${delivery.endpoint} ${delivery.target.topic}` : `${delivery.target.method} ${delivery.endpoint}`}`,
      });
      let failure: AttemptFailureDetails;
      try {
        const ok = await sendAttempt(delivery, attempts);
        lastAttemptAt = Date.now();
        record({ attempt: attempts, startedAt: new Date(startedAt).toISOString(), durationMs: Math.round(ok.durationMs), code: ok.code, ok: true });
        return finish('delivered', `${ok.reason} on attempt ${attempts}`);
      } catch (err) {
        if (isCancellation(err)) throw err;
        failure = failureOf(err, delivery.target.timeout);
      }
      lastAttemptAt = Date.now();
      record({ attempt: attempts, startedAt: new Date(startedAt).toISOString(), durationMs: Math.round(failure.durationMs), code: failure.code, ok: false });
      lastError = { class: failure.class as ErrorClass, code: failure.code, reason: failure.reason, attempt: attempts, at: new Date(lastAttemptAt).toISOString() };

      if (delivery.kind === 'telemetry' && delivery.qos === 0) {
        return finish('dropped', `telemetry QoS 0 is sent once; it failed: ${failure.reason}`);
      }
      if (failure.class === 'client') return finish('rejected', failure.reason);

      const now = Date.now();
      const decision = nextDelay(
        delivery.policy,
        // paused time does not age the delivery
        { attempts, previousDelay, firstAttemptAt: firstAttemptAt + pausedMs, now },
        Math.random,
        failure.retryAfterMs,
      );
      if (!decision.retry) return finish(decision.outcome, `${decision.reason}; last error: ${failure.reason}`);

      previousDelay = decision.delay;
      nextAttemptAt = now + decision.delay;
      const words = waitingSummary({ delayMs: decision.delay, code: failure.code, nextAttempt: attempts + 1, expiresInMs: expiresInMs(), hinted: decision.hinted });
      const becameWaiting = state !== 'waiting';
      state = 'waiting';
      describe(words);
      upsertSearchAttributes([
        ...(becameWaiting ? [{ key: DeliveryState, value: 'waiting' }] : []),
        { key: Attempts, value: attempts },
        ...(searchedClass !== failure.class ? [{ key: LastErrorClass, value: failure.class }] : []),
      ]);
      searchedClass = failure.class as ErrorClass;

      if (patched(SERVER_SIDE_RETRIES)) return await retryOnServer(decision.hinted);

      await continueIfLong();
    }
  } catch (err) {
    if (isCancellation(err)) {
      state = 'cancelled';
      nextAttemptAt = null;
      describe('cancelled');
      upsertSearchAttributes([
        { key: DeliveryState, value: 'cancelled' },
        { key: Attempts, value: attempts },
      ]);
      // a pause or retry now that came with the cancellation is answered (with the true count) before the end
      if (counting) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    }
    throw err;
  }
}

/** The retrying activity's progress carried by its failure (an attempt in flight when it was stopped). */
function progressOf(err: unknown): RetryProgress | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure)) return null;
  return (cause.details?.[1] as RetryProgress | undefined) ?? null;
}
