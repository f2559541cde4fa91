import { condition, isCancellation, patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities, AttemptFailureDetails, AttemptSuccess } from '../activities';
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
 * A delivery's first attempt is a local activity: run by the worker inside the workflow task that started
 * the delivery, recorded as a marker. Delivered at once, a delivery then costs one workflow task and no
 * activity task: 9 history events against 12 before (7 once this patch is retired: its marker and the
 * TemporalChangeVersion upsert the SDK adds to it are 2). Asked only at attempt 1, so a continued run's
 * first attempt and the retries of the timer path record what they always did. A patch, not a field set
 * on new starts: the field would save those 2 events, but an old worker ignores it, and a delivery an old
 * worker ran first (a client upgraded before the workers, any rolling deploy) no new worker could replay
 * (CONTRIBUTING.md).
 */
export const LOCAL_FIRST_ATTEMPT = 'local-first-attempt';

const attemptedLocally = new WeakSet<DeliveryTracker>();

/**
 * Whether this run made its first attempt locally. Code that runs right after a local activity must not ask
 * `patched()`: a query during the activity can make the SDK (1.24) complete the workflow task with the
 * activity's marker and run what follows in the next task, whose patch markers the replay, which resolves
 * the activity within the first task, then fails to find (a nondeterminism error).
 */
export function firstAttemptWasLocal(d: DeliveryTracker): boolean {
  return attemptedLocally.has(d);
}

/**
 * One attempt, once its turn has come: the first attempt of every run, and each retry of a delivery
 * recorded before server-side retries. Its outcome, or null when a retry is planned.
 */
export async function attemptInTurn(d: DeliveryTracker): Promise<DeliveryResult | null> {
  await waitForTurn(d);
  const expired = d.expiredWhilePaused();
  if (expired) return expired;
  const { attempt, startedAt } = d.startAttempt();
  const send = attemptActivity(d, attempt, startedAt);
  let failure: AttemptFailureDetails;
  try {
    return d.delivered(await send(), startedAt);
  } catch (err) {
    if (isCancellation(err)) throw err;
    failure = failureOf(err, d.delivery.target.timeout);
  }
  return d.failed(failure, startedAt);
}

/**
 * Sends attempt `attempt`, started at `startedAt` (this workflow task's time). A local attempt is lost with
 * its worker: the workflow task times out and the next worker sends attempt 1 again (the same Message-Id:
 * at least once), unknown to the count.
 */
function attemptActivity(d: DeliveryTracker, attempt: number, startedAt: number): () => Promise<AttemptSuccess> {
  const { delivery } = d;
  const options = {
    startToCloseTimeout: delivery.target.timeout + ATTEMPT_MARGIN_MS,
    // the workflow does the retrying: with jitter, hints, bounds and visibility
    retry: { maximumAttempts: 1 },
    summary: `attempt ${attempt}: ${attemptsInWords(delivery)}`,
  };
  if (attempt === 1 && patched(LOCAL_FIRST_ATTEMPT)) {
    // the workflow's clock stands still while it runs: the attempt's times are the activity's, never behind it
    const { sendAttempt } = proxyLocalActivities<Activities>(options);
    attemptedLocally.add(d);
    return () => sendAttempt(delivery, attempt, startedAt);
  }
  const { sendAttempt } = proxyActivities<Activities>(options);
  return () => sendAttempt(delivery, attempt);
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
