import { createHash } from 'node:crypto';
import type { SearchAttributePair } from '@temporalio/common';
import { BatchMessages1, BatchMessages2, BatchMessages3 } from '../contract';
import { visibilityString } from '../delivery/filter';

/*
 * A batch's message index (docs/batches.md, "Finding a message by its id"): the batch workflow carries a short key
 * of each of its messages' delivery ids in search attributes set by the start it makes anyway, so that a message
 * delivered at once in its batch is found by its id with one visibility query: no workflow, request or history
 * event per message. The index lives and goes with its batch (the namespace's retention).
 */

/** Base32 in lower case: SQLite's full-text index of keyword lists (the dev server) folds case. */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/** 40 bits of SHA-256: at a billion messages of one tenant, 0.001 other batches match a lookup (each read, and left). */
const KEY_CHARS = 8;
/** What Temporal takes in one search attribute value by default, a keyword list's JSON array (`["k1","k2"]`) whole. */
const VALUE_BYTES = 2_048;
/** Keys in one attribute: each takes its characters, two quotes and a comma; the brackets one more byte. */
export const KEYS_PER_ATTRIBUTE = Math.floor((VALUE_BYTES - 1) / (KEY_CHARS + 3));
const INDEX_ATTRIBUTES = [BatchMessages1, BatchMessages2, BatchMessages3];
/** Messages one indexed batch may hold: batches are cut at this (558), under MAX_BATCH_MESSAGES. */
export const MAX_INDEXED_MESSAGES = KEYS_PER_ATTRIBUTE * INDEX_ATTRIBUTES.length;

/** The index key of a delivery id. */
export function messageKey(deliveryId: string): string {
  let n = createHash('sha256')
    .update(deliveryId)
    .digest()
    .readUIntBE(0, (KEY_CHARS * 5) / 8);
  let key = '';
  for (let i = 0; i < KEY_CHARS; i++) {
    key = ALPHABET[n % 32]! + key;
    n = Math.floor(n / 32);
  }
  return key;
}

/** The search attributes that index a batch's messages. */
export function indexAttributes(deliveryIds: readonly string[]): SearchAttributePair[] {
  const keys = [...new Set(deliveryIds.map(messageKey))];
  if (keys.length > MAX_INDEXED_MESSAGES)
    throw new RangeError(`a batch indexes at most ${MAX_INDEXED_MESSAGES} messages, got ${keys.length}`);
  const pairs: SearchAttributePair[] = [];
  INDEX_ATTRIBUTES.forEach((key, i) => {
    const part = keys.slice(i * KEYS_PER_ATTRIBUTE, (i + 1) * KEYS_PER_ATTRIBUTE);
    if (part.length) pairs.push({ key, value: part });
  });
  return pairs;
}

/** The visibility query for the batches of a tenant whose index holds a delivery id: the same text an operator can paste into the UI. */
export function batchesHoldingQuery(tenant: string, deliveryId: string): string {
  const key = visibilityString(messageKey(deliveryId));
  const any = INDEX_ATTRIBUTES.map((a) => `${a.name} = ${key}`).join(' OR ');
  return `WorkflowType = 'batchWorkflow' AND Tenant = ${visibilityString(tenant)} AND (${any})`;
}

/**
 * The completed batches of a task queue (of one tenant or any of several), as visibility lists them: newest closed
 * first; with a time window, those whose life overlaps it (each message's row lies within its batch's life).
 */
export function completedBatchesQuery(taskQueue: string, filter: { tenant?: string | string[]; since?: Date; until?: Date } = {}): string {
  const tenants = filter.tenant === undefined ? [] : [filter.tenant].flat();
  const clauses = [`WorkflowType = 'batchWorkflow'`, `TaskQueue = ${visibilityString(taskQueue)}`, `ExecutionStatus = 'Completed'`];
  if (tenants.length) clauses.push(`Tenant IN (${tenants.map(visibilityString).join(', ')})`);
  if (filter.since) clauses.push(`CloseTime >= ${visibilityString(filter.since.toISOString())}`);
  if (filter.until) clauses.push(`StartTime <= ${visibilityString(filter.until.toISOString())}`);
  return clauses.join(' AND ');
}
