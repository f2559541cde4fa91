import { CancellationScope, allHandlersFinished, condition, isCancellation, patched, setHandler } from '@temporalio/workflow';
import type { DeliveryResult } from '../delivery/types';
import { type DeliveryWorkflowInput, orderingNoticeSignal, pauseUpdate, resumeUpdate, retryNowUpdate, statusQuery } from '../contract';
import { DeliveryTracker } from './delivery-state';
import { attemptInTurn } from './delivery-turn';
import { DEFAULT_HISTORY_LIMIT } from './history';
import { tellDeadLetter } from './operational-events';
import { leaveKey, leftWith, waitForTurn } from './ordering-turn';
import { HANDED_OVER_FIRST_ATTEMPT } from './patches';
import { RetryingActivity, retryOnServer } from './server-retries';
import { retryOnTimers } from './timer-retries';
import { temporalEffects } from './visibility';

/**
 * One delivery: the first attempt is an activity; the retries are one activity that Temporal retries, its
 * waits drawn from the policy and held on the server (retryDelivery, docs/retries.md), until an outcome (delivered,
 * rejected, dropped, exhausted, expired). Operators read it with the `status` query and steer it with the
 * `retryNow`, `pause` and `resume` updates, or cancel it. Its state and decisions are in DeliveryTracker.
 */
export async function deliveryWorkflow(input: DeliveryWorkflowInput): Promise<DeliveryResult> {
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  const d = new DeliveryTracker(input.delivery, input.carried, { effects: temporalEffects }, input.place);
  const retrying = new RetryingActivity();
  const status = () => d.status();
  setHandler(statusQuery, status);
  const retryNow = () => {
    d.retryNow();
    return retrying.answer(status);
  };
  const pause = (reason: string) => {
    d.pause(reason);
    return retrying.answer(status);
  };
  setHandler(retryNowUpdate, retryNow, { validator: () => d.checkRetryNow() });
  setHandler(pauseUpdate, pause, { validator: (_reason: string) => d.checkPause() });
  setHandler(resumeUpdate, () => d.resume(), { validator: () => d.checkResume() });
  // an ordered delivery (docs/ordering.md) goes in its turn: a field runs from before ordering never had
  const ordered = input.delivery.orderingKey !== undefined;
  if (ordered) setHandler(orderingNoticeSignal, (notice) => d.noticed(notice));
  // a message that ended in an outage hold: its delivery is its dead letter (a new field: no run recorded before it has it)
  if (input.ended) return endedInHold(d, input);
  try {
    // a run continued as new had its turn already
    if (ordered && !input.carried) await waitForTurn(d);
    // the first attempt; then, for a delivery recorded before server-side retries, timers until a failure finds the patch
    // a worker from before batches ignores firstAttempt and sends attempt 1 itself: the patch keeps that run replayable
    const handedOver = input.firstAttempt && patched(HANDED_OVER_FIRST_ATTEMPT);
    const first = handedOver ? d.handedOver(input.firstAttempt!) : await attemptInTurn(d, input.limited === true);
    const result = first ?? (await retryOnTimers(d, historyLimit)) ?? (await retryOnServer(d, retrying, historyLimit));
    tellDeadLetter(input.delivery, result);
    return ordered ? await leftWith(d, result) : result;
  } catch (err) {
    if (isCancellation(err)) {
      d.cancelled();
      // a pause or retry now that came with the cancellation is answered (with the true count) before the end
      if (retrying.counting) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
      if (ordered) await leaveKey(d, 'cancelled');
    }
    throw err;
  }
}

function endedInHold(d: DeliveryTracker, input: DeliveryWorkflowInput): DeliveryResult {
  const result = d.endedInHold(input.ended!);
  tellDeadLetter(input.delivery, result);
  return result;
}
