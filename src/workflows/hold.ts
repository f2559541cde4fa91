import { ApplicationFailure } from '@temporalio/common';
import { allHandlersFinished, condition, proxyActivities, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  type Activities,
  dueQuery,
  HOLD_IDLE_MS,
  heldQuery,
  holdSummaryQuery,
  holdUpdate,
  type HoldInput,
  type HoldResult,
  type HoldWorkflow,
  releasedSignal,
  takeOutUpdate,
  type TakeOut,
} from '../contract';
import { HoldState } from './hold-state';
import { continueAsNewWhenIdle, DEFAULT_HISTORY_LIMIT, historyTooLong } from './history';

/**
 * An outage hold (docs/endpoint-health.md, "Outages"): the messages of batches whose first attempt failed because
 * their endpoint was failing wait here together — handed in by one update per batch, no workflow per message — and
 * are released by one long activity at the pace the worker's recovery pacer allows, each attempt reported back in
 * signals of many. A message leaves delivered, or handed over to a delivery of its own (a dead letter, a 4xx, an
 * operator's control) with the attempts it made here. The hold completes once it has been empty and idle for
 * HOLD_IDLE_MS; it takes at most HOLD_MAX_MESSAGES over its life (the batches go to the next generation after).
 */
export async function holdWorkflow(input: HoldInput): Promise<HoldResult> {
  const hold = new HoldState(input, workflowInfo().workflowId, () => Date.now());
  const { releaseHeld, handOverHeld } = proxyActivities<Activities>({
    // the release heartbeats while it sends; while the endpoint fails it waits on the server (its retries), not here
    heartbeatTimeout: '30s',
    startToCloseTimeout: '1 day',
    retry: { initialInterval: '1s', maximumInterval: '30s' },
  });
  const shown = () => setCurrentDetails(hold.details());
  setHandler(holdUpdate, (messages) => withDetails(hold.take(messages), shown), {
    validator: (messages) => hold.check(messages),
  });
  setHandler(dueQuery, (page) => hold.due(page));
  setHandler(releasedSignal, (reports) => withDetails(hold.report(reports), shown));
  setHandler(heldQuery, (deliveryId) => hold.view(deliveryId));
  setHandler(holdSummaryQuery, () => hold.summary());
  setHandler(
    takeOutUpdate,
    async (deliveryId: string, takeOut: TakeOut) => {
      const message = hold.takeOut(deliveryId);
      if (!message) throw ApplicationFailure.create({ type: 'NotHeld', message: `${deliveryId} no longer waits in ${hold.holdId}` });
      // from here the release sends it no more: its own delivery will
      const answer = await handOverHeld(message, { takenOut: takeOut }).catch((err: unknown) => {
        hold.keep(deliveryId);
        throw err;
      });
      if (hold.waiting.has(deliveryId)) hold.leave(message, 'handed-over');
      shown();
      return answer;
    },
    {
      validator: (deliveryId: string, _takeOut: TakeOut) => {
        if (!hold.waiting.has(deliveryId)) reject(`${deliveryId} does not wait in ${hold.holdId}`);
      },
    },
  );
  shown();
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  for (;;) {
    if (hold.waiting.size > 0) {
      const { holdId } = hold;
      await releaseHeld({ holdId, tenant: input.tenant, endpoint: input.endpoint });
      shown();
    } else if (!(await untilSomethingWaits(hold))) break;
    if (historyTooLong(historyLimit)) await continueAsNewWhenIdle<HoldWorkflow>({ ...input, carried: hold.carried(), historyLimit });
  }
  return { tenant: input.tenant, endpoint: input.endpoint, generation: input.generation, left: hold.left };
}

/** Waits for messages; false when none came for HOLD_IDLE_MS: the hold is sealed, and done once no update is still running. */
async function untilSomethingWaits(hold: HoldState): Promise<boolean> {
  const idleFor = HOLD_IDLE_MS - (Date.now() - hold.lastIntakeAt);
  if (idleFor > 0 && (await condition(() => hold.waiting.size > 0, idleFor))) return true;
  if (Date.now() - hold.lastIntakeAt < HOLD_IDLE_MS) return true;
  hold.sealed = true;
  await condition(allHandlersFinished);
  return hold.waiting.size > 0;
}

function withDetails<T>(value: T, shown: () => void): T {
  shown();
  return value;
}

function reject(message: string): never {
  throw ApplicationFailure.create({ type: 'NotHeld', message });
}
