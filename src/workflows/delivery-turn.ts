import { condition, isCancellation, proxyActivities, type RetryPolicy } from '@temporalio/workflow';
import { type Activities, ATTEMPT_MARGIN_MS, type AttemptFailureDetails, type DeliveryWorkflow, failureOf, unsentOf } from '../contract';
import { FAILURE_TYPES, UNSENT_TYPE } from '../classify/classify';
import { attemptsInWords } from '../delivery/summary';
import type { DeliveryResult } from '../delivery/types';
import type { DeliveryTracker } from './delivery-state';
import { continueAsNewWhenIdle, historyTooLong } from './history';

/*
 * The steps of a delivery's loop that both ways of retrying share (retryOnTimers, retryOnServer): a
 * pause, the wait for an attempt's turn, an attempt made by the workflow, and continue-as-new.
 */

/** A paused delivery waits here for resume; a retry-now asked meanwhile is void. */
export async function untilResumed(d: DeliveryTracker): Promise<void> {
  if (!d.waitsForResume()) return;
  await condition(() => !d.paused);
  d.resumed();
}

/** A long delivery continues in a fresh run: same id, the message and everything it has learnt. */
export async function continueIfLong(d: DeliveryTracker, historyLimit: number): Promise<void> {
  if (!historyTooLong(historyLimit)) return;
  await continueAsNewWhenIdle<DeliveryWorkflow>({ delivery: d.delivery, historyLimit, carried: d.carried() });
}

/**
 * One attempt as an activity, once its turn has come: the first attempt of every run, and each retry of a
 * delivery recorded before server-side retries. Its outcome, or null when a retry is planned. `limited`: the
 * attempt may wait on the server for room at its endpoint (DeliveryWorkflowInput.limited).
 */
export async function attemptInTurn(d: DeliveryTracker, limited = false): Promise<DeliveryResult | null> {
  await waitForTurn(d);
  const expired = d.expiredWhilePaused();
  if (expired) return expired;
  const { attempt, startedAt } = d.startAttempt();
  const { sendAttempt } = proxyActivities<Activities>({
    startToCloseTimeout: d.delivery.target.timeout + ATTEMPT_MARGIN_MS,
    // the workflow does the retrying: with jitter, hints, bounds and visibility; Temporal only the waits for room
    retry: limited ? WAITS_FOR_ROOM : { maximumAttempts: 1 },
    summary: `attempt ${attempt}: ${attemptsInWords(d.delivery)}`,
  });
  let failure: AttemptFailureDetails;
  try {
    return d.delivered(await (limited ? sendAttempt(d.delivery, attempt, { limited }) : sendAttempt(d.delivery, attempt)), startedAt);
  } catch (err) {
    if (isCancellation(err)) throw err;
    const unsent = unsentOf(err);
    if (unsent) return d.unsent(unsent.outcome, unsent.reason);
    failure = failureOf(err, d.delivery.target.timeout);
  }
  return d.failed(failure, startedAt);
}

/**
 * An attempt waits on the server for room at its endpoint (the endpoint's limits, passLimits): Temporal retries the
 * activity when it says so, and a worker lost mid-attempt a second later; an attempt's own failure, or a
 * delivery ended unsent, goes to the workflow. Runs started before the limits try once.
 */
const WAITS_FOR_ROOM: RetryPolicy = {
  initialInterval: '1s',
  backoffCoefficient: 1,
  maximumInterval: '1s',
  nonRetryableErrorTypes: [...Object.values(FAILURE_TYPES), UNSENT_TYPE],
};

/** Waits on a durable timer until the planned attempt time, a retry-now, or the end of a pause. */
async function waitForTurn(d: DeliveryTracker): Promise<void> {
  for (;;) {
    await untilResumed(d);
    const wait = d.waitBeforeTurn();
    if (!wait) break;
    const interrupted = await condition(() => d.retryRequested || d.paused, wait.ms, { summary: wait.words });
    if (!interrupted || d.retryRequested) break;
  }
  d.turnTaken();
}
