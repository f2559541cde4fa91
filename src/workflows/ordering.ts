import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import {
  type Activities,
  enqueueUpdate,
  leftSignal,
  type OrderingNotice,
  orderingNoticeSignal,
  type OrderingStatus,
  orderingStatusQuery,
  type OrderingWorkflowInput,
  releaseUpdate,
  startedSignal,
  withdrawSignal,
} from '../contract';
import { DEFAULT_HISTORY_LIMIT, historyTooLong } from './history';
import { OrderingQueue } from './ordering-state';

/** An idle key's sequencer completes after this long (a new submit starts it again): keys in use keep theirs. */
export const IDLE_CLOSE_MS = 5 * 60_000;

/**
 * An ordering key's sequencer, `ordering/<tenant>/<key>` (docs/ordering.md): the client takes a place for each
 * delivery (the `enqueue` update, with start) before starting it; a delivery says when it has started (`arrived`)
 * and when it ends (`left`); the sequencer admits the head of the queue, one delivery at a time, and tells the
 * others what they wait for. Its history stays bounded: it continues as new, carrying the queue.
 */
export async function orderingWorkflow(input: OrderingWorkflowInput): Promise<OrderingStatus> {
  const q = new OrderingQueue(input.tenant, input.key, input.carried);
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  let changes = 0;
  handleMessages(q, input.key, () => changes++);
  const sending = new Notices(q, () => changes++);
  for (;;) {
    sending.send();
    setCurrentDetails(q.status(0).summary);
    if (historyTooLong(historyLimit)) {
      // an update or signal that came meanwhile is in the state carried over; a notice it made is sent first
      await sending.settled();
      await condition(allHandlersFinished);
      if (q.hasNotices || sending.busy) continue;
      await continueAsNew<typeof orderingWorkflow>({ ...input, carried: q.carried() });
    }
    const check = q.arrivalCheck(Date.now());
    if (check?.inMs === 0) {
      q.checked(check.deliveryId, await arrivalOf(check), Date.now());
      continue;
    }
    const seen = changes;
    const idle = q.idle();
    const timeout = check ? check.inMs : idle ? IDLE_CLOSE_MS : null;
    const woken = timeout === null ? await condition(() => changes !== seen) : await condition(() => changes !== seen, timeout);
    if (!woken && idle) {
      await sending.settled();
      await condition(allHandlersFinished);
      if (q.idle() && !sending.busy) return q.status();
    }
  }
}

/** The updates, signals and query of a key's sequencer, each a call on its queue; `changed` wakes the loop. */
function handleMessages(q: OrderingQueue, key: string, changed: () => void): void {
  const now = () => Date.now();
  setHandler(orderingStatusQuery, (limit?: number) => q.status(limit));
  setHandler(
    enqueueUpdate,
    (requests) => {
      changed();
      return requests.map((r) => q.enqueue(r, now()));
    },
    { validator: (requests) => q.checkEnqueue(requests, now()) },
  );
  setHandler(
    releaseUpdate,
    (deliveryId) => {
      changed();
      return q.release(deliveryId, now());
    },
    { validator: (deliveryId) => q.checkRelease(deliveryId) },
  );
  setHandler(withdrawSignal, ({ deliveryId }) => {
    q.withdraw(deliveryId, now());
    changed();
  });
  setHandler(leftSignal, ({ deliveryId, outcome }) => {
    q.left(deliveryId, outcome, now());
    changed();
  });
  setHandler(startedSignal, ({ started }) => {
    for (const { deliveryId, behind } of started) {
      // its place was dropped (it started too late) or given back: it takes one at the end
      if (!q.arrived(deliveryId, now(), behind)) log.warn(`${deliveryId} started without a place on ${key}: queued at the end`);
    }
    changed();
  });
}

/**
 * The notices the queue collects, each sent as soon as the loop comes round: a turn is never held up behind
 * the round trips of other notices. One that cannot reach its delivery means it ended without a word.
 */
class Notices {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly q: OrderingQueue,
    private readonly changed: () => void,
  ) {}

  get busy(): boolean {
    return this.inFlight.size > 0;
  }

  send(): void {
    for (const [deliveryId, notice] of this.q.takeNotices()) {
      const sent: Promise<void> = this.signal(deliveryId, notice).finally(() => this.inFlight.delete(sent));
      this.inFlight.add(sent);
    }
  }

  /** Every notice sent has reached its delivery (or found it gone): before the run ends or continues as new. */
  async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.all(this.inFlight);
  }

  private async signal(deliveryId: string, notice: OrderingNotice): Promise<void> {
    try {
      await getExternalWorkflowHandle(deliveryId).signal(orderingNoticeSignal, notice);
    } catch {
      this.q.gone(deliveryId, Date.now());
      this.changed();
    }
  }
}

/** Looks up a head's delivery that has not said it started (the orderingArrival activity). */
function arrivalOf(check: { deliveryId: string; via?: string }) {
  const { orderingArrival } = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumInterval: '30s' } });
  return orderingArrival(check.deliveryId, check.via);
}
