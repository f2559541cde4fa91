import { createHash } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import {
  BATCH_MEMO_MESSAGES,
  type BatchMemo,
  type BatchResult,
  batchWorkflowId,
  type BatchWorkflowInput,
  Tenant,
  type BatchWorkflow,
  type HeldEnd,
  type MessageResult,
} from '../contract';
import { fingerprintOf } from '../starter/delivery-start';
import type { Delivery, DeliveryResult, Outcome } from '../delivery/types';
import { ConfigError } from '../config/errors';
import { isEncryptedValue } from '../encryption/codec';
import { ConflictError, InvalidInputError, type Problem } from '../errors';
import { validateDeliveries, type ValidateOptions } from '../validation/delivery';
import { idSchema, storedBytes } from '../validation/limits';
import { mapBounded } from '../concurrency/pool';
import { indexAttributes, MAX_INDEXED_MESSAGES } from './message-index';
import { nativeJson } from '../temporal/raw-json';

/*
 * Batches on the client's side (docs/batches.md): a set of deliveries cut into batches that each start in one
 * Temporal start, and what they came to.
 */

/**
 * Messages in one batch: at most MAX_BATCH_MESSAGES and MAX_BATCH_BYTES of deliveries as stored. A batch's
 * input is one payload, stored twice in its history (the start, the activity's input), and Temporal refuses a
 * payload over 2 MiB: a megabyte leaves room for encryption, the result's row per message and the rest.
 */
export const MAX_BATCH_MESSAGES = 1_000;
export const MAX_BATCH_BYTES = 1024 * 1024;
export const DEFAULT_BATCH_MESSAGES = 500;

export interface BatchBounds {
  maxMessages: number;
  maxBytes: number;
}

/** One batch to start: the deliveries of one tenant, each message once. */
export interface PlannedBatch {
  tenant: string;
  batchId: string;
  deliveries: Delivery[];
  /** A hash of the tenant and its messages' fingerprints (batchContents): the batch id when none is given. */
  contents: string;
}

/** A message and its fingerprint, computed once (a hash of the whole delivery: the cost that counts at volume). */
interface Fingerprinted {
  delivery: Delivery;
  fingerprint: string;
}

/**
 * Cuts validated deliveries into batches: by tenant, then by the bounds. A message repeated in the set (same
 * delivery id) is sent once if it is the same message, refused (naming `[i].messageId`) if it is not. Batch ids:
 * `batchId` (with `-1`, `-2`, … when a tenant's messages take several batches), else from the batch's contents,
 * so that the same messages submitted again make the same batch, which is not started twice.
 */
export function planBatches(deliveries: readonly Delivery[], bounds: BatchBounds, batchId?: string): PlannedBatch[] {
  const byTenant = new Map<string, Fingerprinted[]>();
  // pushed, not copied: a copy per message made a file of 100,000 messages take minutes to plan
  for (const f of uniqueDeliveries(deliveries)) {
    const list = byTenant.get(f.delivery.tenant);
    if (list) list.push(f);
    else byTenant.set(f.delivery.tenant, [f]);
  }
  const batches: PlannedBatch[] = [];
  // a batch indexes its messages by id in search attributes of bounded size (message-index.ts)
  const cut = { ...bounds, maxMessages: Math.min(bounds.maxMessages, MAX_INDEXED_MESSAGES) };
  for (const [tenant, list] of byTenant) {
    const chunks = chunk(list, cut);
    chunks.forEach((part, n) => {
      const contents = batchContents(
        tenant,
        part.map((f) => f.fingerprint),
      );
      const id = batchId === undefined ? contents : chunks.length > 1 ? `${batchId}-${n + 1}` : batchId;
      batches.push({ tenant, batchId: id, deliveries: part.map((f) => f.delivery), contents });
    });
  }
  return batches;
}

/** How a set of messages is cut into batches (Redeliver.submitBatch). */
export interface BatchOptions {
  batchId?: string;
  maxMessages?: number;
  maxBytes?: number;
}

/**
 * Every input validated and the set cut into batches, without I/O: bad input (or options) is refused here,
 * naming the field, before anything starts. Redeliver.startBatches starts the plan.
 */
export function planSubmission(inputs: readonly unknown[], options: BatchOptions = {}, validate: ValidateOptions = {}): PlannedBatch[] {
  checkBatchId(options.batchId);
  const bounds = batchBounds(options);
  return planBatches(validateDeliveries(inputs, validate), bounds, options.batchId);
}

/** Bounds as given, checked: a wrong one is refused naming it. */
export function batchBounds(options: { maxMessages?: number; maxBytes?: number }, field = ''): BatchBounds {
  const problems: Problem[] = [];
  const bound = (name: 'maxMessages' | 'maxBytes', max: number, fallback: number) => {
    const value = options[name] ?? fallback;
    if (!Number.isInteger(value) || value < 1 || value > max)
      problems.push({ field: field + name, message: `must be an integer from 1 to ${max}` });
    return value;
  };
  const bounds = {
    maxMessages: bound('maxMessages', MAX_BATCH_MESSAGES, DEFAULT_BATCH_MESSAGES),
    maxBytes: bound('maxBytes', MAX_BATCH_BYTES, MAX_BATCH_BYTES),
  };
  if (problems.length) throw new InvalidInputError(problems, 'batch options');
  return bounds;
}

/** A batch id given by the caller: as a message id, it is part of a workflow id. */
export function checkBatchId(batchId: string | undefined): void {
  if (batchId === undefined) return;
  const parsed = idSchema('batch id').safeParse(batchId);
  if (!parsed.success) throw new InvalidInputError([{ field: 'batchId', message: parsed.error.issues[0]!.message }], 'batch');
}

function uniqueDeliveries(deliveries: readonly Delivery[]): Fingerprinted[] {
  const seen = new Map<string, string>();
  const problems: Problem[] = [];
  const unique: Fingerprinted[] = [];
  deliveries.forEach((d, i) => {
    const fingerprint = fingerprintOf(d);
    const earlier = seen.get(d.deliveryId);
    if (earlier === undefined) {
      seen.set(d.deliveryId, fingerprint);
      unique.push({ delivery: d, fingerprint });
    } else if (earlier !== fingerprint) {
      problems.push({
        field: `[${i}].messageId`,
        message: `${d.messageId} is used earlier in the batch for a different message or target`,
      });
    }
  });
  if (problems.length) throw new InvalidInputError(problems, 'deliveries');
  return unique;
}

function chunk(list: Fingerprinted[], { maxMessages, maxBytes }: BatchBounds): Fingerprinted[][] {
  const chunks: Fingerprinted[][] = [];
  let current: Fingerprinted[] = [];
  let bytes = 0;
  for (const d of list) {
    const size = storedBytes(d.delivery) + 1;
    if (current.length && (current.length >= maxMessages || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(d);
    bytes += size;
  }
  if (current.length) chunks.push(current);
  return chunks;
}

/** What a batch holds, as a hash of its tenant and its messages' fingerprints: the same messages, the same hash. */
export function batchContents(tenant: string, fingerprints: readonly string[]): string {
  const hash = createHash('sha256').update(tenant);
  for (const f of fingerprints) hash.update(`\n${f}`);
  return hash.digest('base64url').slice(0, 22);
}

/** A batch as started: `created` false when a batch of that id existed (resubmitted: nothing is sent again). */
export class BatchHandle {
  constructor(
    private readonly client: Client,
    readonly tenant: string,
    readonly batchId: string,
    readonly messages: number,
    readonly created: boolean,
  ) {}

  get workflowId(): string {
    return batchWorkflowId(this.tenant, this.batchId);
  }

  /** Waits for the batch's first attempts: each message delivered at once, or handed to its own delivery. */
  result(): Promise<BatchResult> {
    return this.client.workflow.getHandle<BatchWorkflow>(this.workflowId).result();
  }
}

/** Starts one batch's workflow; one that exists is not started again (if it holds the same messages). */
export async function startBatch(
  client: Client,
  taskQueue: string,
  batch: PlannedBatch,
  { historyLimit, places, index = true }: { historyLimit?: number; places?: BatchWorkflowInput['places']; index?: boolean } = {},
): Promise<BatchHandle> {
  const input: BatchWorkflowInput = {
    batchId: batch.batchId,
    tenant: batch.tenant,
    deliveries: batch.deliveries,
    ...(historyLimit && { historyLimit }),
    ...(places && { places }),
  };
  const handle = (created: boolean) => new BatchHandle(client, batch.tenant, batch.batchId, batch.deliveries.length, created);
  const memo: BatchMemo = { contents: batch.contents, [BATCH_MEMO_MESSAGES]: batch.deliveries.length };
  try {
    await client.workflow.start<BatchWorkflow>('batchWorkflow', {
      workflowId: batchWorkflowId(batch.tenant, batch.batchId),
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      taskQueue,
      // its JSON made natively: the SDK's converter encodes UTF-8 in JavaScript, slow for hundreds of messages
      args: [nativeJson(input) as unknown as BatchWorkflowInput],
      memo: memo as unknown as Record<string, unknown>,
      staticSummary: `batch of ${batch.deliveries.length} messages for ${batch.tenant}`,
      typedSearchAttributes: [
        { key: Tenant, value: batch.tenant },
        ...(index ? indexAttributes(batch.deliveries.map((d) => d.deliveryId)) : []),
      ],
    });
    return handle(true);
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    // an id made from the contents holds the same messages by construction
    if (batch.batchId !== memo.contents) await checkSameMessages(client, batch, memo.contents);
    return handle(false);
  }
}

/** A batch id given again for other messages would start nothing and send none of them: refused instead, as submit refuses a message id. */
async function checkSameMessages(client: Client, batch: PlannedBatch, contents: string): Promise<void> {
  const workflowId = batchWorkflowId(batch.tenant, batch.batchId);
  const existing = ((await client.workflow.getHandle(workflowId).describe()).memo as Partial<BatchMemo> | undefined)?.contents;
  if (isEncryptedValue(existing)) {
    const message = `is not set, and ${workflowId} exists encrypted: without the keys a resubmit cannot be told from a batch of other messages`;
    throw new ConfigError([{ variable: 'REDELIVER_ENCRYPTION_KEYS', message }]);
  }
  // a batch started before batches kept their contents: taken as the same, as before
  if (existing !== undefined && existing !== contents) {
    throw new ConflictError([{ field: 'batchId', message: `${batch.batchId} was already used for a batch of other messages` }], 'batch');
  }
}

/** One message's outcome, however it was reached: at once in its batch, or by its own delivery. */
export interface MessageOutcome {
  deliveryId: string;
  messageId: string;
  outcome: Outcome;
  attempts: number;
  /** The batch's first attempt's code, or the delivery's last error's. */
  code: string | null;
}

/** Batches submitted together (Redeliver.submitBatch). */
export class BatchSubmission {
  constructor(
    readonly batches: BatchHandle[],
    /** Each message's delivery id, in the order given (a message repeated in the set: once). */
    readonly deliveryIds: string[],
    private readonly deliveryResult: (deliveryId: string) => Promise<DeliveryResult>,
    /** How a message held in an outage hold left it, once it has (docs/endpoint-health.md, "Outages"). */
    private readonly heldEnd: (holdId: string, deliveryId: string) => Promise<HeldEnd>,
  ) {}

  get messages(): number {
    return this.deliveryIds.length;
  }

  /**
   * Waits for every message's outcome: its batch's first attempt; for a message held in an outage hold, its
   * leaving the hold; then the delivery of each one not delivered so.
   */
  async outcomes(concurrency = 32): Promise<MessageOutcome[]> {
    const results = (await Promise.all(this.batches.map((b) => b.result()))).flatMap((b) => b.results);
    return mapBounded(results, concurrency, async (r): Promise<MessageOutcome> => {
      const delivered = (attempts: number, code: string): MessageOutcome => ({
        deliveryId: r.deliveryId,
        messageId: r.messageId,
        outcome: 'delivered',
        attempts,
        code,
      });
      if (r.disposition === 'delivered') return delivered(1, r.code);
      const left = await this.leftHold(r);
      if (left?.left === 'delivered') return delivered(left.attempts, left.code);
      const d = await this.deliveryResult(r.deliveryId);
      return {
        deliveryId: r.deliveryId,
        messageId: r.messageId,
        outcome: d.outcome,
        attempts: d.attempts,
        code: d.lastError?.code ?? null,
      };
    });
  }

  /** How a held message left its hold; null for a message that was not held. */
  private async leftHold(r: MessageResult): Promise<HeldEnd | null> {
    if (r.disposition !== 'held') return null;
    if (!r.hold) throw new Error(`${r.deliveryId} is held, but its batch's result does not name the hold`);
    return this.heldEnd(r.hold, r.deliveryId);
  }
}
