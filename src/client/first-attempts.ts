import {
  ActivityClient,
  ActivityNotFoundError,
  type ActivityExecutionDescription,
  type ActivityHandle,
  type WorkflowClient,
} from '@temporalio/client';
import { visibilityString, type DeliveryFilter } from '../delivery/filter';
import type { DeliveryStatus } from '../delivery/types';
import { FIRST_ATTEMPT_ACTIVITY, firstAttemptMessage } from '../starter/first-attempt';
import { ConfigError } from '../config/errors';
import { isEncryptedValue } from '../encryption/codec';
import { DeliveryKind, Endpoint, type BatchResult, type MessageResult } from '../contract';
import type { FoundBatched } from './batched';

/*
 * A single submit's first attempt, a standalone activity whose id is the delivery id (docs/batches.md, "A single
 * submit"): found by that id with one describe, and read as a batch of one: its row, once made, says where the
 * message went (delivered at once, handed to a delivery of its own, or held).
 */

const clients = new WeakMap<WorkflowClient, ActivityClient>();

/** The activity client on a workflow client's connection, namespace and data converter (its payload codec). */
export function activityClientOf(client: WorkflowClient): ActivityClient {
  let activities = clients.get(client);
  if (!activities) {
    const { namespace, dataConverter } = client.options;
    activities = new ActivityClient({ connection: client.connection, namespace, ...(dataConverter && { dataConverter }) });
    clients.set(client, activities);
  }
  return activities;
}

/**
 * The closed first attempts of a task queue's single submits matching a filter's message fields, as visibility lists
 * them (newest closed first); with a time window, those whose life overlaps it. The same text an operator can paste
 * into the UI's Standalone Activities page.
 */
export function closedFirstAttemptsQuery(taskQueue: string, filter: DeliveryFilter): string {
  return firstAttemptsQuery(taskQueue, filter, `ExecutionStatus IN ('Completed', 'Canceled', 'Terminated', 'Failed', 'TimedOut')`);
}

/** The first attempts of a task queue's single submits matching a filter's message fields and time window, running or closed. */
export function firstAttemptsQuery(taskQueue: string, filter: DeliveryFilter, ...more: string[]): string {
  const tenants = filter.tenant === undefined ? [] : [filter.tenant].flat();
  const clauses = [`ActivityType = ${visibilityString(FIRST_ATTEMPT_ACTIVITY)}`, `TaskQueue = ${visibilityString(taskQueue)}`, ...more];
  if (tenants.length) clauses.push(`Tenant IN (${tenants.map(visibilityString).join(', ')})`);
  if (filter.device) clauses.push(`Device = ${visibilityString(filter.device)}`);
  if (filter.kind) clauses.push(`DeliveryKind = ${visibilityString(filter.kind)}`);
  if (filter.endpoint) clauses.push(`Endpoint = ${visibilityString(filter.endpoint)}`);
  if (filter.since) clauses.push(`CloseTime >= ${visibilityString(filter.since.toISOString())}`);
  if (filter.until) clauses.push(`StartTime <= ${visibilityString(filter.until.toISOString())}`);
  return clauses.join(' AND ');
}

/** The words a status uses for what makes a single submit's first attempt ("delivered at once in …"): its activity has the delivery's id. */
export const FIRST_ATTEMPT_WORDS = 'a standalone activity';

/** A single submit's first attempt by its delivery id; null when there is none (or it is gone past retention). */
export async function findFirstAttempt(activities: ActivityClient, deliveryId: string): Promise<FoundBatched | null> {
  const handle = activities.getHandle<BatchResult>(deliveryId);
  let description: ActivityExecutionDescription;
  try {
    description = await handle.describe({ includeInput: true, includeOutcome: true, includeHeartbeatDetails: true });
  } catch (err) {
    if (err instanceof ActivityNotFoundError) return null;
    throw err;
  }
  const settled = (withinMs = Infinity) => settledRow(handle, deliveryId, withinMs);
  const common = { deliveryId, batch: null, source: FIRST_ATTEMPT_WORDS, settled, facts: await factsOf(description) };
  if (description.status === 'COMPLETED') return { ...common, row: await completedRow(description, deliveryId) };
  if (description.status === 'RUNNING' || description.status === 'PAUSED') {
    // its row, once made, is in its heartbeat (as a batch's activity saves its progress)
    const progress = await description.getHeartbeatDetails<Record<number, MessageResult> | unknown>();
    const saved = isEncryptedValue(progress) ? {} : ((progress ?? {}) as Record<number, MessageResult>);
    return { ...common, row: saved[0] ?? null };
  }
  // it ended without a row (a POST in flight then may have reached the endpoint)
  return { ...common, row: null, cancelled: endedHow(description.status) };
}

/** How a first attempt that is no more ended without a row, in a status's words. */
function endedHow(status: ActivityExecutionDescription['status']): NonNullable<FoundBatched['cancelled']> {
  return status === 'CANCELED' ? 'by request' : status === 'TERMINATED' ? 'terminated' : status === 'TIMED_OUT' ? 'timed out' : 'failed';
}

/** A completed first attempt's row: where the message went (a process without the keys cannot read it). */
async function completedRow(description: ActivityExecutionDescription, deliveryId: string): Promise<MessageResult | null> {
  const result = await description.getResult<BatchResult | unknown>();
  if (isEncryptedValue(result)) throw unreadable(deliveryId);
  return rowOf(result);
}

/**
 * The row once the first attempt is done, asked every moment for at most `withinMs`: null when it ended without
 * one; undefined when it is still under way then.
 */
async function settledRow(
  handle: ActivityHandle<BatchResult>,
  deliveryId: string,
  withinMs: number,
): Promise<MessageResult | null | undefined> {
  const until = Date.now() + withinMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 1_000)) {
    const description = await handle.describe({ includeOutcome: true });
    if (description.status === 'COMPLETED') return completedRow(description, deliveryId);
    if (description.status !== 'RUNNING' && description.status !== 'PAUSED') return null;
    if (Date.now() + delay > until) return undefined;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

/** A first attempt stored encrypted, read by a process without the keys. */
function unreadable(deliveryId: string): ConfigError {
  const message = `is not set, and ${deliveryId} made its first attempt encrypted: without the keys its outcome cannot be read`;
  return new ConfigError([{ variable: 'REDELIVER_ENCRYPTION_KEYS', message }]);
}

/** The message's row in a first attempt's result; null for an encrypted one a process without keys cannot read. */
function rowOf(result: BatchResult | unknown): MessageResult | null {
  return isEncryptedValue(result) ? null : ((result as BatchResult | undefined)?.results[0] ?? null);
}

/** What the message is: from the first attempt's input, else (encrypted) from its search attributes. */
async function factsOf(description: ActivityExecutionDescription): Promise<FoundBatched['facts']> {
  const message = await firstAttemptMessage(description);
  const delivery = isEncryptedValue(message) ? undefined : message;
  if (delivery) return { kind: delivery.kind, qos: delivery.qos, endpoint: delivery.endpoint };
  const sa = description.typedSearchAttributes;
  return { kind: sa.get(DeliveryKind) as DeliveryStatus['kind'], endpoint: sa.get(Endpoint) ?? '' };
}
