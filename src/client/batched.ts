import type { WorkflowClient, WorkflowExecutionInfo } from '@temporalio/client';
import { batchesHoldingQuery } from '../batching/message-index';
import { idParts } from '../delivery/ids';
import type { DeliveryResult, DeliveryStatus } from '../delivery/types';
import { isEncryptedValue } from '../encryption/codec';
import { pendingActivityHeartbeat, startArgument } from '../temporal/sdk-adapter';
import { heldEnd } from './holds';
import { batchNamed, type BatchResult, type BatchWorkflow, type BatchWorkflowInput, type MessageResult } from '../contract';

/*
 * A message of a batch that needed no delivery of its own (delivered at once, or held in an outage hold) is
 * found by its id through its batch's message index (docs/batches.md, "Finding a message by its id"): the
 * batches whose index holds its key, newest first, and in the first that has it, its row.
 */

/** A message found in its batch, or in a single submit's first attempt (a batch of one: first-attempts.ts). */
export interface FoundBatched {
  deliveryId: string;
  /** The batch it came in; null for a single submit's first attempt. */
  batch: { batchId: string; workflowId: string } | null;
  /** What makes its first attempt, as a status names it: the batch's workflow id, or the standalone activity. */
  source: string;
  /** Its row in the batch: null while the batch (running) has not come to it. */
  row: MessageResult | null;
  /** What the message is. */
  facts: Pick<MessageResult, 'kind' | 'qos' | 'endpoint'>;
  /**
   * Its row once its first attempt is done, waiting at most `withinMs` (default: until it is): null when it ended
   * without one (cancelled), undefined when it was still under way then.
   */
  settled: (withinMs?: number) => Promise<MessageResult | null | undefined>;
  /** A single submit's first attempt that ended without a row, and how: cancelled by request, terminated, … */
  cancelled?: 'by request' | 'terminated' | 'timed out' | 'failed';
}

/** The batch that holds a message, newest first; null when none does (or none this process can read: encrypted). */
export async function findBatched(client: WorkflowClient, deliveryId: string): Promise<FoundBatched | null> {
  const { tenant } = idParts(deliveryId);
  if (!tenant) return null;
  for await (const batch of client.list({ query: batchesHoldingQuery(tenant, deliveryId) })) {
    // another message's key may match too (a short hash): its row says
    const found = await inBatch(client, batch, deliveryId);
    if (found) return found;
  }
  return null;
}

async function inBatch(client: WorkflowClient, batch: WorkflowExecutionInfo, deliveryId: string): Promise<FoundBatched | null> {
  const handle = client.getHandle<BatchWorkflow>(batch.workflowId);
  const named = batchNamed(batch.workflowId);
  const settled = async () => (await handle.result()).results.find((r) => r.deliveryId === deliveryId) ?? null;
  const name = { batch: named, source: batch.workflowId, settled };
  // visibility lags behind: a batch it lists as running may have completed since (its result already read by a
  // caller); the description is up to date
  const now = batch.status.name === 'RUNNING' ? await handle.describe() : undefined;
  const status = now?.status.name ?? batch.status.name;
  if (status === 'COMPLETED') {
    const result: BatchResult | unknown = await handle.result();
    if (isEncryptedValue(result)) return null;
    const row = (result as BatchResult).results.find((r) => r.deliveryId === deliveryId);
    if (!row) return null;
    if (row.kind) return { deliveryId, ...name, row, facts: row };
    // a result from before rows said what their message was: the batch's input does
    const facts = await messageFacts(client, batch, deliveryId);
    return facts && { deliveryId, ...name, row, facts };
  }
  if (status !== 'RUNNING' || !now) return null;
  const facts = await messageFacts(client, batch, deliveryId);
  if (!facts) return null;
  // its first attempts under way: the rows done so far are in the activity's heartbeat
  const progress = await pendingActivityHeartbeat<Record<number, MessageResult>>(client.options.loadedDataConverter, now, 'firstAttempts');
  const row = Object.values(progress ?? {}).find((r) => r.deliveryId === deliveryId) ?? null;
  return { deliveryId, ...name, row, facts };
}

/** A message's kind, QoS and endpoint from its batch's input (read from the batch's first event); null when it is not there. */
async function messageFacts(
  client: WorkflowClient,
  batch: WorkflowExecutionInfo,
  deliveryId: string,
): Promise<FoundBatched['facts'] | null> {
  return (await batchInputFacts(client, batch)).get(deliveryId) ?? null;
}

/** What each message of a batch is, by delivery id, from the batch's input: for rows written before they said so themselves. */
export async function batchInputFacts(client: WorkflowClient, batch: WorkflowExecutionInfo): Promise<Map<string, FoundBatched['facts']>> {
  const input = await startArgument<BatchWorkflowInput | unknown>(client, batch.workflowId, batch.runId);
  if (input === undefined || isEncryptedValue(input)) return new Map();
  const deliveries = (input as BatchWorkflowInput).deliveries;
  return new Map(deliveries.map((d) => [d.deliveryId, { kind: d.kind, qos: d.qos, endpoint: d.endpoint }]));
}

/**
 * The status of a message in its batch: making its first attempt, or delivered at once. One held or handed over
 * is told by its hold or its own delivery: null here.
 */
export function batchedStatus({ deliveryId, batch, source, row, facts, cancelled }: FoundBatched): DeliveryStatus | null {
  if (row && row.disposition !== 'delivered') return null;
  const { tenant, device, messageId } = idParts(deliveryId);
  const common = {
    deliveryId,
    messageId,
    tenant,
    device,
    kind: facts.kind!,
    qos: facts.qos ?? null,
    endpoint: facts.endpoint ?? '',
    nextAttemptAt: null,
    lastError: null,
    pause: null,
    ...(batch && { batch }),
  };
  const unattempted = { attempts: 0, firstAttemptAt: null, lastAttemptAt: null, attemptLog: [] };
  if (cancelled) return { ...common, ...unattempted, state: 'cancelled', summary: `cancelled: ${cancelled}, in ${source}` };
  if (!row) return { ...common, ...unattempted, state: 'attempting', summary: `making its first attempt in ${source}` };
  return {
    ...common,
    state: 'delivered',
    attempts: 1,
    // a batch keeps when each first attempt ended
    firstAttemptAt: row.at,
    lastAttemptAt: row.at,
    attemptLog: [],
    summary: `delivered at once in ${source} (${row.code})`,
  };
}

/**
 * The outcome of a message found in its batch, once it has one: delivered at once; delivered from the hold it
 * waited in; else its own delivery's (`own`, once that delivery is found). Waits for the batch and the hold as
 * a batch's `outcomes()` does.
 */
export async function batchedResult(
  client: WorkflowClient,
  found: FoundBatched,
  own: () => Promise<DeliveryResult>,
): Promise<DeliveryResult> {
  const { deliveryId } = found;
  const row = found.row ?? (found.cancelled ? null : await found.settled());
  if (row === undefined) throw new Error(`${deliveryId}: its first attempt never settled`);
  const { messageId } = idParts(deliveryId);
  const delivered = (attempts: number, at: string, where: string): DeliveryResult => ({
    deliveryId,
    messageId,
    outcome: 'delivered',
    attempts,
    firstAttemptAt: attempts === 1 ? at : null,
    lastAttemptAt: at,
    lastError: null,
    reason: `delivered ${where}`,
  });
  if (row?.disposition === 'delivered') return delivered(1, row.at, `at once in ${found.source} (${row.code})`);
  if (!row && (found.cancelled || found.batch === null)) {
    const reason = `cancelled ${found.cancelled ?? 'by request'}, in ${found.source}`;
    return { deliveryId, messageId, outcome: 'cancelled', attempts: 0, firstAttemptAt: null, lastAttemptAt: null, lastError: null, reason };
  }
  if (row?.disposition === 'held' && row.hold) {
    const end = await heldEnd(client, row.hold, deliveryId);
    if (end.left === 'delivered') return delivered(end.attempts, new Date(end.at).toISOString(), `from ${row.hold} (${end.code})`);
  }
  return own();
}
