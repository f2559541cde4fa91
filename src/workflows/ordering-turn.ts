import { CancellationScope, condition, getExternalWorkflowHandle } from '@temporalio/workflow';
import { leftSignal, orderingWorkflowId } from '../contract';
import type { Delivery, DeliveryResult, Outcome } from '../delivery/types';
import type { DeliveryTracker } from './delivery-state';

/*
 * An ordered delivery's side of its key (docs/ordering.md): its place was taken before it started, and whoever
 * started it told the key's sequencer (orderingWorkflow) it exists; it waits for its turn, and tells the
 * sequencer when it ends.
 */

const sequencerOf = (d: Delivery) => getExternalWorkflowHandle(orderingWorkflowId(d.tenant, d.orderingKey!));

/** Waits until every earlier delivery of its key has ended: the sequencer's admission (pause and cancel still work). */
export async function waitForTurn(d: DeliveryTracker): Promise<void> {
  await condition(() => d.admitted);
}

/** Tells the sequencer the delivery has ended, whatever ended it (a cancel included): the next one's turn, or a stopped key. */
export async function leaveKey(d: DeliveryTracker, outcome: Outcome): Promise<void> {
  await CancellationScope.nonCancellable(async () => {
    try {
      await sequencerOf(d.delivery).signal(leftSignal, { deliveryId: d.delivery.deliveryId, outcome });
    } catch {
      // no sequencer (terminated by hand): nothing holds the key
    }
  });
}

/** The outcome, once the sequencer knows it. */
export async function leftWith(d: DeliveryTracker, result: DeliveryResult): Promise<DeliveryResult> {
  await leaveKey(d, result.outcome);
  return result;
}
