import {
  ActivityExecutionAlreadyStartedError,
  type ActivityExecutionDescription,
  type ActivityOptions,
  type Client,
} from '@temporalio/client';
import { isEncryptedValue, type EncryptedValue } from '../encryption/codec';
import { deliverySummary } from '../delivery/summary';
import type { Delivery } from '../delivery/types';
import { DeliveryKind, Device, Endpoint, firstAttemptSource, Tenant, type BatchWorkflowInput } from '../contract';
import { fairnessKeyOf, fingerprintOf } from './delivery-start';

/*
 * A single submit's first attempt as a standalone activity (docs/batches.md, "A single submit"): a batch of one
 * without a workflow. Delivered at once, it is done; not, it hands the message to a delivery of its own carrying
 * the attempt, or to its endpoint's outage hold, as a batch does. Its activity id is the delivery id.
 */

/** The activity type a single submit's first attempt runs as (registered by the worker next to firstAttempts). */
export const FIRST_ATTEMPT_ACTIVITY = 'firstAttempt';

/** The input of a single submit's first attempt: the batch of one that `firstAttempts` makes. */
export function firstAttemptInput(delivery: Delivery, historyLimit?: number): BatchWorkflowInput {
  return {
    batchId: delivery.messageId,
    tenant: delivery.tenant,
    deliveries: [delivery],
    source: firstAttemptSource(delivery.deliveryId),
    ...(historyLimit && { historyLimit }),
  };
}

/**
 * The options of `client.activity.start(FIRST_ATTEMPT_ACTIVITY, …)`. Its id is never reused within retention
 * (REJECT_DUPLICATE: the server's default would start, and send, again after one completed); its timeouts and
 * retries are a batch's first attempts' (batchWorkflow): retried until done, a lost worker noticed by the heartbeat.
 * Search attributes are set at the start and cannot change after it: what the message is, not where it stands.
 */
export function firstAttemptStart(delivery: Delivery, taskQueue: string, historyLimit?: number): ActivityOptions {
  return {
    id: delivery.deliveryId,
    taskQueue,
    args: [firstAttemptInput(delivery, historyLimit)],
    idReusePolicy: 'REJECT_DUPLICATE',
    idConflictPolicy: 'FAIL',
    heartbeatTimeout: '20s',
    startToCloseTimeout: '1 day',
    retry: { initialInterval: '1s', maximumInterval: '30s' },
    summary: `first attempt of ${deliverySummary(delivery)}`,
    priority: { fairnessKey: fairnessKeyOf(delivery.tenant) },
    typedSearchAttributes: [
      { key: DeliveryKind, value: delivery.kind },
      { key: Endpoint, value: delivery.endpoint },
      { key: Tenant, value: delivery.tenant },
      { key: Device, value: delivery.device },
    ],
  };
}

/**
 * Starts a single submit's first attempt. `created` false: one of that id exists (running, or closed within
 * retention), and `fingerprint` is the message it was started with (an encrypted value to a process without keys).
 */
export async function startFirstAttempt(
  client: Client,
  delivery: Delivery,
  taskQueue: string,
  historyLimit?: number,
): Promise<{ created: true } | { created: false; fingerprint: unknown }> {
  try {
    await client.activity.start(FIRST_ATTEMPT_ACTIVITY, firstAttemptStart(delivery, taskQueue, historyLimit));
    return { created: true };
  } catch (err) {
    if (!(err instanceof ActivityExecutionAlreadyStartedError)) throw err;
    return { created: false, fingerprint: await firstAttemptFingerprint(client, delivery.deliveryId) };
  }
}

/** The fingerprint of the message a first attempt was started with, from its input. */
async function firstAttemptFingerprint(client: Client, deliveryId: string): Promise<unknown> {
  const description = await client.activity.getHandle(deliveryId).describe({ includeInput: true });
  const input = await firstAttemptMessage(description);
  return isEncryptedValue(input) ? input : input && fingerprintOf(input);
}

/**
 * The message a first attempt was started with, from its description (with its input): an encrypted value to a
 * process without the keys; undefined when the description has no input.
 */
export async function firstAttemptMessage(description: ActivityExecutionDescription): Promise<Delivery | EncryptedValue | undefined> {
  const [input] = (await description.getInput<[BatchWorkflowInput | EncryptedValue]>()) ?? [];
  return isEncryptedValue(input) ? input : input?.deliveries[0];
}

/** A client (or a workflow client) as the capability check needs it. */
type NamespaceClient = Pick<Client, 'workflowService'> & { options: { namespace: string } };

const asked = new WeakMap<NamespaceClient, Promise<boolean>>();

/**
 * Whether the namespace runs standalone activities (Temporal 1.32 on: `activity.enableStandalone`), asked once per
 * client: where it does not, a single submit starts its delivery's workflow as before, and the reads look for no
 * first attempt. A failed ask (Temporal away) is asked again next time.
 */
export function runsStandaloneActivities(client: NamespaceClient): Promise<boolean> {
  let answer = asked.get(client);
  if (!answer) {
    answer = client.workflowService
      .describeNamespace({ namespace: client.options.namespace })
      .then(({ namespaceInfo }) => namespaceInfo?.capabilities?.standaloneActivities === true);
    answer.catch(() => asked.delete(client));
    asked.set(client, answer);
  }
  return answer;
}
