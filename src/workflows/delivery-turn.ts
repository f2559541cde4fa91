import { condition, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Activities, AttemptFailureDetails } from '../activities';
import { attemptsInWords } from '../delivery/summary';
import type { DeliveryResult } from '../delivery/types';
import type { DeliveryTracker, DeliveryWorkflow } from './delivery-state';
import { ATTEMPT_MARGIN_MS, failureOf } from './failures';
import { continueAsNewWhenIdle, historyTooLong } from './history';

/*
 * The steps of a delivery's loop that both ways of retrying share (timer-retries.ts, server-retries.ts): a
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
 * delivery recorded before server-side retries. Its outcome, or null when a retry is planned.
 */
export async function attemptInTurn(d: DeliveryTracker): Promise<DeliveryResult | null> {
  await waitForTurn(d);
  const expired = d.expiredWhilePaused();
  if (expired) return expired;
  const { attempt, startedAt } = d.startAttempt();
  const { sendAttempt } = proxyActivities<Activities>({
    startToCloseTimeout: d.delivery.target.timeout + ATTEMPT_MARGIN_MS,
    // the workflow does the retrying: with jitter, hints, bounds and visibility
    retry: { maximumAttempts: 1 },
    summary: `attempt ${attempt}: ${attemptsInWords(d.delivery)}`,
  });
  let failure: AttemptFailureDetails;
  try {
    return d.delivered(await sendAttempt(d.delivery, attempt), startedAt);
  } catch (err) {
    if (isCancellation(err)) throw err;
    failure = failureOf(err, d.delivery.target.timeout);
  }
  return d.failed(failure, startedAt);
}

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
