import {
  ActivityCancellationType,
  CancellationScope,
  CancelledFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import { type Activities, ATTEMPT_MARGIN_MS, type RetryEnd, type RetryInput, type RetryProgress, progressOf } from '../contract';
import { attemptsInWords } from '../delivery/summary';
import type { Delivery, DeliveryResult, DeliveryStatus } from '../delivery/types';
import type { DeliveryTracker } from './delivery-state';
import { continueIfLong, untilResumed } from './delivery-turn';
import { OUTCOME_BEFORE_CANCEL, TRUE_ATTEMPT_COUNTS } from './patches';

const cancelled = () => new CancelledFailure('the delivery was cancelled');

/**
 * The retrying activity as the controls see it: whether one runs, and when it stops. Pause, retry now and cancel
 * answer with the attempts the endpoint saw (TRUE_ATTEMPT_COUNTS): the activity runs out of reach of the delivery's
 * cancellation, so the workflow reads its progress before stopping it, and the updates answer once it has stopped.
 */
export class RetryingActivity {
  running = false;
  /** How many have stopped so far: a control waits for the next. */
  stops = 0;
  /** TRUE_ATTEMPT_COUNTS: asked at a control while retrying, so that a delivery without one records no marker. */
  counting = false;

  countTruly(): boolean {
    return (this.counting = patched(TRUE_ATTEMPT_COUNTS) || this.counting);
  }

  /** A control's answer: the status once the retrying activity it stopped has handed over its progress. */
  answer(status: () => DeliveryStatus): DeliveryStatus | Promise<DeliveryStatus> {
    if (!this.running || !this.countTruly()) return status();
    const before = this.stops;
    return CancellationScope.nonCancellable(() => condition(() => this.stops > before || !this.running)).then(status);
  }

  /** Before the delivery ends: with true counts, a control waiting for the activity is answered first. */
  async handlersAnswered(): Promise<void> {
    // not cancellable: a delivery whose outcome stands over a cancel (OUTCOME_BEFORE_CANCEL) still answers them
    if (this.counting) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  }
}

/**
 * The retries after the first failed attempt, as one activity that Temporal retries (retryDelivery, docs/retries.md):
 * it waits on the server between attempts and adds no history event per retry. The workflow wakes when it
 * ends with an outcome, when the error class changes (to keep LastErrorClass true in the UI's list), or
 * when an operator pauses it or asks to retry now: then it stops the activity and starts another after.
 */
export async function retryOnServer(d: DeliveryTracker, retrying: RetryingActivity, historyLimit: number): Promise<DeliveryResult> {
  const root = CancellationScope.current();
  const retryUntilStopped = retrier(d, retrying, root);
  for (;;) {
    // class changes, pauses and retry-nows add events
    await continueIfLong(d, historyLimit);
    await untilResumed(d);
    // an operator's retry-now goes out at once, past the endpoint's retry budget
    const skipBudget = d.takeRetryRequest();
    const expired = d.expiredWhilePaused();
    if (expired) return expired;
    const input = d.retryInput(skipBudget);
    // the activity is out of the cancellation's reach: one cancelled already is not started (as it was not before)
    if (root.consideredCancelled) throw cancelled();
    retrying.running = true;
    let end: RetryEnd | null;
    try {
      end = await retryUntilStopped(input);
    } finally {
      retrying.running = false;
      retrying.stops++;
    }
    if (end === null) continue;
    d.retryEnded(end);
    // an attempt in flight when the cancel came that ended the delivery (delivered, or a dead letter) stands:
    // the endpoint has it, and saying "cancelled" would be untrue (asked only then: other runs record no marker)
    const outcomeStands = end.end !== 'class-changed' && root.consideredCancelled && retrying.counting && patched(OUTCOME_BEFORE_CANCEL);
    if (retrying.counting && root.consideredCancelled && !outcomeStands) throw cancelled();
    if (end.end !== 'class-changed') {
      await retrying.handlersAnswered();
      return d.finishRetries(end);
    }
    d.classChanged();
  }
}

/**
 * Runs one retrying activity until it ends or is stopped (pause, retry now, or with true counts the
 * delivery's cancellation): how it ended, or null when stopped without an outcome, its progress adopted.
 */
function retrier(d: DeliveryTracker, retrying: RetryingActivity, root: CancellationScope) {
  const { retryDelivery, retryProgress } = retryActivities(d.delivery);
  // the delivery's cancellation does not reach the retrying activity: the workflow stops it itself
  const shield = new CancellationScope({ cancellable: false });
  return async (input: RetryInput): Promise<RetryEnd | null> => {
    const scope = new CancellationScope({ cancellable: true, parent: shield });
    const running = scope.run(() => retryDelivery(input));
    let stopped = false;
    let seen: RetryProgress | null = null;
    try {
      const stop = shield.run(() => condition(() => d.paused || d.retryRequested || root.consideredCancelled));
      const end = await Promise.race([running, stop.then(() => null)]);
      if (end !== null) return end;
      if (root.consideredCancelled && !retrying.countTruly()) {
        // as recorded before true counts: the cancellation stops the activity at once, unread
        scope.cancel();
        throw cancelled();
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
      d.adoptStopped(progressOf(err) ?? (stopped ? seen : null));
      // the delivery itself was cancelled: it ends so, whatever the activity ended with
      if (CancellationScope.current().consideredCancelled) throw isCancellation(err) ? err : cancelled();
      return null;
    }
  };
}

function retryActivities(delivery: Delivery) {
  const { retryDelivery } = proxyActivities<Activities>({
    startToCloseTimeout: delivery.target.timeout + ATTEMPT_MARGIN_MS,
    // every failure says when to come back (nextRetryDelay). This applies only when the worker running an
    // attempt is lost: the next attempt of the activity comes a second later, counts the lost one, and waits
    retry: { initialInterval: '1s', backoffCoefficient: 1, maximumInterval: '1s' },
    // an attempt in flight finishes before a pause or a retry-now takes over: its outcome is not lost
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    summary: `retries: ${attemptsInWords(delivery)}`,
  });
  const { retryProgress } = proxyLocalActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumAttempts: 3 } });
  return { retryDelivery, retryProgress };
}
