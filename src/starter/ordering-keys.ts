import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import {
  type EnqueueRequest,
  enqueueUpdate,
  OrderingKey,
  type OrderingStatus,
  orderingStatusQuery,
  orderingWorkflowId,
  type Place,
  releaseUpdate,
  startedSignal,
  type StartPlace,
  Tenant,
  withdrawSignal,
  type OrderingWorkflow,
} from '../contract';
import type { Delivery } from '../delivery/types';
import { ConflictError, DeliveryControlError, InvalidInputError, refusalKindOf } from '../errors';

/** How many times a place is asked for when the key's sequencer was just closing (idle) as the ask came. */
const ENQUEUE_TRIES = 3;

/**
 * Ordering keys on the client's side (docs/ordering.md): a delivery's place on its key is taken before the
 * delivery starts (`submit`, batches, redrive), from the key's sequencer, started with the first ask; a key's
 * status, and its release. `Redeliver.ordering` is one.
 */
export class OrderingKeys {
  /** Asks for places, per key: concurrent submits on a key cost one round trip per group, in the order made. */
  private readonly places = new PerKey<KeyRequest, Place[]>(
    (asks) => this.enqueueNow(asks),
    // a full key refuses them together: one on its own may still fit
    (err) => err instanceof InvalidInputError,
  );
  /** Deliveries said to have started, per key: one signal per group. */
  private readonly starts = new PerKey<{ tenant: string; key: string; started: Started }, void>((items) => this.signalStarted(items));

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /** A delivery's place, taken before it starts: nothing starts when its key is full (refused naming `orderingKey`). */
  async take(delivery: Pick<Delivery, 'deliveryId' | 'tenant' | 'orderingKey'>, options: { redrive?: boolean } = {}): Promise<Place> {
    const request = { deliveryIds: [delivery.deliveryId], ...(options.redrive && { redrive: true }) };
    const [place] = await this.enqueue(delivery.tenant, delivery.orderingKey!, request);
    return place!;
  }

  /**
   * Places for a batch's ordered messages, key by key in the order given: each one's place (none without an
   * ordered message), and the messages whose place is taken now (not held already).
   */
  async takeForBatch(deliveries: readonly Delivery[], via: string): Promise<{ places?: Record<string, StartPlace>; taken: Delivery[] }> {
    const groups = byKey(deliveries);
    if (groups.length === 0) return { taken: [] };
    const asked = await Promise.all(
      groups.map(async (list) => ({
        list,
        places: await this.enqueue(list[0]!.tenant, list[0]!.orderingKey!, { deliveryIds: list.map((d) => d.deliveryId), via }),
      })),
    );
    const places: Record<string, StartPlace> = {};
    for (const { places: got } of asked) for (const p of got) places[p.deliveryId] = { position: p.position, behind: p.behind };
    return { places, taken: asked.flatMap(({ list, places: got }) => list.filter((_, i) => !got[i]!.existing)) };
  }

  /**
   * Tells each key's sequencer that these deliveries have started, with what each was told it waits for: their places
   * can be admitted (a signal reaches them now). Best effort: a head never said to have started is looked up by its
   * sequencer within a minute (docs/ordering.md), so a signal lost costs time, not order.
   */
  async started(
    started: readonly { delivery: Pick<Delivery, 'deliveryId' | 'tenant' | 'orderingKey'>; behind: string | null }[],
  ): Promise<void> {
    await Promise.all(
      started.map(({ delivery: { deliveryId, tenant, orderingKey: key }, behind }) =>
        this.starts.call(`${tenant}/${key!}`, { tenant, key: key!, started: { deliveryId, behind } }).catch(() => undefined),
      ),
    );
  }

  /** Gives back a place taken for a delivery that turned out to exist already (a resubmit): the key must not wait for its start. */
  async withdraw(delivery: Pick<Delivery, 'deliveryId' | 'tenant' | 'orderingKey'>): Promise<void> {
    await this.sequencer(delivery.tenant, delivery.orderingKey!)
      .signal(withdrawSignal, { deliveryId: delivery.deliveryId })
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  }

  /** Gives back the places of those whose deliveries exist and have ended: their own places went with them. */
  async giveBackIfEnded(deliveries: readonly Delivery[]): Promise<void> {
    for (const d of deliveries) {
      const running = await this.client.workflow
        .getHandle(d.deliveryId)
        .describe()
        .then(
          (x) => x.status.name === 'RUNNING',
          () => true,
        );
      if (!running) await this.withdraw(d);
    }
  }

  /** The key's head, its queue (the first `limit` places, in order), the dead letter that stopped it if one did. */
  async status(tenant: string, key: string, limit = 100): Promise<OrderingStatus> {
    const handle = this.sequencer(tenant, key);
    const running = await handle.describe().then(
      (d) => d.status.name === 'RUNNING',
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
    if (!running) return idleKey(tenant, key);
    return handle.query(orderingStatusQuery, limit);
  }

  /**
   * Lets a stopped key go on past its dead letter (which stays a dead letter: redrive it later if wanted, it then
   * queues at the end), or past a head that will never say it ended (its workflow terminated, or never started).
   * Refused (`NotBlocked`) while the head is being delivered: pause or cancel it instead.
   */
  async release(tenant: string, key: string): Promise<OrderingStatus> {
    const id = orderingWorkflowId(tenant, key);
    const status = await this.status(tenant, key, 0);
    const holder = status.blocked?.deliveryId ?? (status.head && (await this.headEnded(status.head)) ? status.head.deliveryId : null);
    if (!holder) {
      const why = status.head ? `${status.head.deliveryId} is being delivered: pause or cancel it instead` : 'nothing holds it';
      throw new DeliveryControlError(id, 'NotBlocked', `the key is not stopped (${why})`);
    }
    try {
      return await this.sequencer(tenant, key).executeUpdate(releaseUpdate, { args: [holder] });
    } catch (err) {
      if (!(err instanceof WorkflowUpdateFailedError)) throw err;
      throw new DeliveryControlError(id, refusalKindOf(err.cause), err.cause?.message ?? err.message);
    }
  }

  /** A head an operator may release: its delivery never started, or ended without a word (terminated). */
  private async headEnded(head: { deliveryId: string; admitted: boolean }): Promise<boolean> {
    if (!head.admitted) return true;
    const description = await this.client.workflow
      .getHandle(head.deliveryId)
      .describe()
      .catch(() => null);
    return description?.status.name !== 'RUNNING';
  }

  private sequencer(tenant: string, key: string) {
    return this.client.workflow.getHandle<OrderingWorkflow>(orderingWorkflowId(tenant, key));
  }

  private enqueue(tenant: string, key: string, request: EnqueueRequest): Promise<Place[]> {
    return this.places.call(`${tenant}/${key}`, { tenant, key, request });
  }

  /**
   * Says started, in one signal for a key's group. A key whose sequencer has gone (their places were dropped, they
   * started too late, and the key went idle) gets a new one, and they get places at the end.
   */
  private async signalStarted(items: { tenant: string; key: string; started: Started }[]): Promise<void[]> {
    const { tenant, key } = items[0]!;
    const signal = { started: items.map((i) => i.started) };
    try {
      await this.sequencer(tenant, key).signal(startedSignal, signal);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      await this.enqueue(tenant, key, { deliveryIds: signal.started.map((s) => s.deliveryId) });
      await this.sequencer(tenant, key).signal(startedSignal, signal);
    }
    return items.map(() => undefined);
  }

  private async enqueueNow(asks: KeyRequest[]): Promise<Place[][]> {
    const { tenant, key } = asks[0]!;
    const requests = asks.map((a) => a.request);
    for (let tries = 1; ; tries++) {
      try {
        return await this.client.workflow.executeUpdateWithStart(enqueueUpdate, {
          args: [requests],
          startWorkflowOperation: new WithStartWorkflowOperation<OrderingWorkflow>('orderingWorkflow', {
            workflowId: orderingWorkflowId(tenant, key),
            workflowIdConflictPolicy: 'USE_EXISTING',
            taskQueue: this.taskQueue,
            args: [{ tenant, key }],
            staticSummary: `ordering key ${tenant}/${key}: its deliveries one at a time, in submit order`,
            typedSearchAttributes: [
              { key: Tenant, value: tenant },
              { key: OrderingKey, value: key },
            ],
          }),
        });
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError && refusalKindOf(err.cause) === 'KeyFull') {
          throw new ConflictError([{ field: 'orderingKey', message: err.cause?.message ?? err.message }], 'delivery');
        }
        // the sequencer completed (idle) as the ask came: the next ask starts a new one
        if (tries < ENQUEUE_TRIES && err instanceof WorkflowNotFoundError) continue;
        throw err;
      }
    }
  }
}

/** Ordered deliveries, grouped by tenant and key, each group in the order given. */
function byKey(deliveries: readonly Delivery[]): Delivery[][] {
  const groups = new Map<string, Delivery[]>();
  for (const d of deliveries) {
    if (d.orderingKey === undefined) continue;
    const key = `${d.tenant}/${d.orderingKey}`;
    const group = groups.get(key);
    if (group) group.push(d);
    else groups.set(key, [d]);
  }
  return [...groups.values()];
}

interface KeyRequest {
  tenant: string;
  key: string;
  request: EnqueueRequest;
}

type Started = { deliveryId: string; behind: string | null };

/**
 * Calls per key: those made while one is in flight wait, then go together in one call, in the order made. When a
 * group fails with an error `alone` accepts, each of its calls is made again on its own.
 */
class PerKey<I, O> {
  private readonly waiting = new Map<string, { item: I; resolve: (out: O) => void; reject: (err: unknown) => void }[]>();
  private readonly busy = new Set<string>();

  constructor(
    private readonly send: (items: I[]) => Promise<O[]>,
    private readonly alone: (err: unknown) => boolean = () => false,
  ) {}

  call(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const calls = this.waiting.get(key) ?? [];
      calls.push({ item, resolve, reject });
      this.waiting.set(key, calls);
      if (!this.busy.has(key)) void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    this.busy.add(key);
    try {
      for (let calls = this.waiting.get(key); calls?.length; calls = this.waiting.get(key)) {
        this.waiting.delete(key);
        await this.flush(calls);
      }
    } finally {
      this.busy.delete(key);
    }
  }

  private async flush(calls: { item: I; resolve: (out: O) => void; reject: (err: unknown) => void }[]): Promise<void> {
    try {
      const out = await this.send(calls.map((c) => c.item));
      calls.forEach((c, i) => c.resolve(out[i]!));
    } catch (err) {
      if (calls.length > 1 && this.alone(err)) for (const call of calls) await this.flush([call]);
      else for (const call of calls) call.reject(err);
    }
  }
}

function idleKey(tenant: string, key: string): OrderingStatus {
  const zero = { head: null, blocked: null, queued: 0, queue: [], enqueued: 0, passed: 0, run: 0 };
  return { tenant, key, state: 'idle', ...zero, summary: 'idle: nothing queued (no sequencer runs for it)' };
}
