import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { ConfigError } from '../config/errors';
import { deliveryStart, fingerprintOf, type DeliveryMemo, type DeliveryStart } from './delivery-start';
import type { Delivery } from '../delivery/types';
import { isEncryptedValue } from '../encryption/codec';
import { ConflictError } from '../errors';
import type { DeliveryWorkflow, Place } from '../contract';
import { OrderingKeys } from './ordering-keys';
import { startRequestId } from '../temporal/sdk-adapter';
import { runsStandaloneActivities, startFirstAttempt } from './first-attempt';

/*
 * The one way a delivery's workflow is started from outside a workflow: a submit and a redrive (the client), a
 * batch handing a message over to its own delivery, an operational event. Its options (id, memo and fingerprint,
 * search attributes, fairness key) come from deliveryStart; an id already started is never an error here, it is
 * `created: false` with a handle on the one that exists. An ordered delivery takes its place on its key before it
 * starts and tells the key once it has (docs/ordering.md). A command's response is started by its subscription's
 * workflow as a child, with the same id, title and search attributes (the contract's deliveryStartOptions).
 */

/** How to start: everything of DeliveryStart but what the starter knows (task queue, history limit). */
export type StartHow = Partial<Omit<DeliveryStart, 'taskQueue' | 'historyLimit'>>;

/** A delivery's workflow as a start left it: started by it (`created`, from the run it made), or one that was there already. */
export type Started =
  | { workflow: WorkflowHandleWithFirstExecutionRunId<DeliveryWorkflow>; created: true }
  | { workflow: WorkflowHandle<DeliveryWorkflow>; created: false };

export class DeliveryStarter {
  constructor(
    private readonly client: Client,
    readonly taskQueue: string,
    private readonly historyLimit?: number,
    /** The client's own, when it has one: concurrent submits on a key share its round trips. */
    readonly ordering: OrderingKeys = new OrderingKeys(client, taskQueue),
    /** How a single submit makes its first attempt (docs/batches.md, "A single submit"). Default `workflow`. */
    private readonly singleSubmit: SingleSubmit = 'workflow',
  ) {}

  /** Starts the delivery's workflow (REJECT_DUPLICATE unless told); one of that id running or kept: `created` false. */
  async start(delivery: Delivery, how: StartHow = {}): Promise<Started> {
    const { historyLimit } = this;
    const options = deliveryStart(delivery, {
      ...how,
      taskQueue: this.taskQueue,
      reuse: how.reuse ?? 'REJECT_DUPLICATE',
      ...(historyLimit && { historyLimit }),
    });
    try {
      const workflow = await this.client.workflow.start<DeliveryWorkflow>('deliveryWorkflow', {
        ...options,
        // a redrive's start is deduplicated by the server against the dead letter's run (see redriveRequestId)
        ...(how.redrive && startRequestId(redriveRequestId(how.redrive.of))),
      });
      return { workflow, created: true as const };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      return { workflow: this.client.workflow.getHandle<DeliveryWorkflow>(delivery.deliveryId), created: false as const };
    }
  }

  /**
   * The ordering hand-shake around a start: an ordered delivery takes its place on its key first (a key that is
   * full starts nothing; a redrive's place is at the head of the key it stopped), and once started, its key may
   * give it its turn. `place`: the one taken, for a caller that must give it back.
   */
  async startInTurn(delivery: Delivery, how: Omit<StartHow, 'place'> = {}): Promise<Started & { place: Place | null }> {
    const place = delivery.orderingKey === undefined ? null : await this.ordering.take(delivery, { ...(how.redrive && { redrive: true }) });
    const started = await this.start(delivery, { ...how, ...(place && { place }) });
    if (place && started.created) await this.ordering.started([{ delivery, behind: place.behind }]);
    return { ...started, place };
  }

  /**
   * A submit: a message without an ordering key makes its first attempt as a standalone activity where the server
   * runs them (submitFirst), else its delivery is started in its turn. A message id submitted again is the existing
   * delivery if it is the same message (its fingerprint), refused naming messageId if not.
   */
  async submit(delivery: Delivery): Promise<{ workflow: WorkflowHandle<DeliveryWorkflow>; created: boolean }> {
    if (delivery.orderingKey === undefined && (await this.startsStandalone())) return this.submitFirst(delivery);
    const { place, ...started } = await this.startInTurn(delivery);
    if (!started.created) {
      const description = await started.workflow.describe();
      const existing = (description.memo as unknown as DeliveryMemo | undefined)?.fingerprint;
      // a place taken just now for a delivery that exists goes back, unless that one runs and holds it (the same message)
      const holds = description.status.name === 'RUNNING' && existing === fingerprintOf(delivery);
      if (place && !place.existing && !holds) await this.ordering.withdraw(delivery);
      sameMessage(delivery, existing);
    }
    return started;
  }

  /**
   * A single submit's first attempt as a standalone activity, idempotent across both steps: a delivery of the id
   * (from any submit, or this one's hand-over) is the answer; else the first attempt, started once per id within
   * retention. The handle is the delivery's: it finds the first attempt while there is no workflow.
   */
  private async submitFirst(delivery: Delivery): Promise<{ workflow: WorkflowHandle<DeliveryWorkflow>; created: boolean }> {
    const workflow = this.client.workflow.getHandle<DeliveryWorkflow>(delivery.deliveryId);
    const description = await workflow.describe().catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    });
    if (description) {
      sameMessage(delivery, (description.memo as unknown as DeliveryMemo | undefined)?.fingerprint);
      return { workflow, created: false };
    }
    const first = await startFirstAttempt(this.client, delivery, this.taskQueue, this.historyLimit);
    if (!first.created) sameMessage(delivery, first.fingerprint);
    return { workflow, created: first.created };
  }

  private startsStandalone(): Promise<boolean> {
    return this.singleSubmit === 'workflow' ? Promise.resolve(false) : runsStandaloneActivities(this.client);
  }
}

/** How a single submit makes its first attempt: a standalone activity where the server runs them, or a workflow. */
export type SingleSubmit = 'standalone' | 'workflow';

/** A message id submitted again: refused (naming messageId) unless it is the same message as the one that exists. */
function sameMessage(delivery: Delivery, existing: unknown): void {
  if (isEncryptedValue(existing)) {
    const message = `is not set, and ${delivery.deliveryId} exists encrypted: without the keys a resubmit cannot be told from a different message`;
    throw new ConfigError([{ variable: 'REDELIVER_ENCRYPTION_KEYS', message }]);
  }
  if (existing !== undefined && existing !== fingerprintOf(delivery)) {
    throw new ConflictError(
      [{ field: 'messageId', message: `${delivery.messageId} was already submitted with a different message or target` }],
      'delivery',
    );
  }
}

/**
 * The request id of every redrive of one dead letter. Temporal's server decides a start under the workflow
 * id's lock, and replaces the current run only if it is still the one it read (compare and set): a start
 * whose request id made the current run, running or closed, gets that run back instead of a new one; one
 * that finds another run running is refused. So while the run a redrive started is the delivery's latest,
 * any other redrive of the same dead letter, before or after it ended, starts nothing.
 */
function redriveRequestId(deadLetterRunId: string): string {
  return `redrive-of-${deadLetterRunId}`;
}
