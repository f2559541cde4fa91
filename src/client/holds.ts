import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowClient, type WorkflowHandle } from '@temporalio/client';
import { runningHoldsQuery } from '../delivery/filter';
import { idParts } from '../delivery/ids';
import type { DeliveryStatus } from '../delivery/types';
import { isEncryptedValue } from '../encryption/codec';
import {
  Endpoint,
  heldQuery,
  takeOutUpdate,
  type HeldEnd,
  type HeldView,
  type HoldResult,
  type HoldWorkflow,
  type TakeOut,
} from '../contract';

/*
 * A message of a batch that waits in an outage hold (docs/endpoint-health.md, "Outages") has no delivery
 * workflow of its own, yet stays first-class by its id: its status is read from its hold, a control takes it
 * out of the hold into a delivery of its own first, and a batch's outcomes wait for it to leave the hold.
 */

/** A message found in a hold: the hold, the endpoint it waits for, and what the hold says of it. */
export interface FoundHeld {
  deliveryId: string;
  holdId: string;
  endpoint: string;
  view: HeldView;
}

/**
 * The hold a message waits (or waited) in, among the running holds of its tenant (the tenant is part of the
 * delivery id); null when none has it. Asked one at a time: a tenant has a hold per failing endpoint, a few.
 */
export async function findHeld(client: WorkflowClient, deliveryId: string): Promise<FoundHeld | null> {
  const { tenant } = idParts(deliveryId);
  if (!tenant) return null;
  for await (const hold of client.list({ query: runningHoldsQuery(tenant) })) {
    const view = await client
      .getHandle<HoldWorkflow>(hold.workflowId)
      .query(heldQuery, deliveryId)
      // it completed since it was listed: it holds nothing any more
      .catch((err: unknown) => (err instanceof WorkflowNotFoundError ? null : Promise.reject(err)));
    // an encrypted answer, to a process without the keys, cannot say whether it holds the message
    if (view && !isEncryptedValue(view)) {
      return { deliveryId, holdId: hold.workflowId, endpoint: hold.typedSearchAttributes.get(Endpoint) ?? '', view };
    }
  }
  return null;
}

/**
 * A message in the hold its batch named, running or completed (its result says how each message left it); null
 * when the hold does not know it, or answers encrypted to a process without keys.
 */
export function heldIn(client: WorkflowClient, holdId: string, deliveryId: string): Promise<FoundHeld | null> {
  return heldReader(client)(holdId, deliveryId);
}

/**
 * heldIn for many messages (a listing): each hold is described once, and a completed one's result read once;
 * a running hold is asked of each message.
 */
export function heldReader(client: WorkflowClient): (holdId: string, deliveryId: string) => Promise<FoundHeld | null> {
  const holds = new Map<string, Promise<{ endpoint: string; result: HoldResult | null }>>();
  // a hold that tells nothing: gone past its retention, or encrypted to a process without keys
  const silent = { left: {} } as HoldResult;
  const read = async (hold: WorkflowHandle<HoldWorkflow>) => {
    const description = await hold.describe().catch((err: unknown) => (err instanceof WorkflowNotFoundError ? null : Promise.reject(err)));
    if (!description) return { endpoint: '', result: silent };
    const endpoint = description.typedSearchAttributes.get(Endpoint) ?? '';
    if (description.status.name === 'RUNNING') return { endpoint, result: null };
    const result = await hold.result();
    return { endpoint, result: isEncryptedValue(result) ? silent : result };
  };
  return async (holdId, deliveryId) => {
    const hold = client.getHandle<HoldWorkflow>(holdId);
    if (!holds.has(holdId)) holds.set(holdId, read(hold));
    const { endpoint, result } = await holds.get(holdId)!;
    if (result) {
      const left = result.left[deliveryId];
      return left ? { deliveryId, holdId, endpoint, view: { holdId, message: null, left, summary: `left ${holdId}` } } : null;
    }
    const view = await hold.query(heldQuery, deliveryId);
    return view && !isEncryptedValue(view) ? { deliveryId, holdId, endpoint, view } : null;
  };
}

/** A held message's status: waiting in its hold, or delivered from it (one handed over has a delivery of its own). */
export function heldStatus({ deliveryId, holdId, endpoint, view }: FoundHeld): DeliveryStatus {
  const { tenant, device, messageId } = idParts(deliveryId);
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  // the hold releases it when the endpoint answers again, at the pace it takes: no next attempt is planned
  const common = { deliveryId, messageId, tenant, device, endpoint, nextAttemptAt: null, pause: null, hold: { holdId } };
  const m = view.message;
  if (m) {
    return {
      ...common,
      kind: m.kind,
      qos: m.qos,
      state: 'waiting',
      attempts: m.attempts,
      firstAttemptAt: iso(m.firstAttemptAt),
      lastAttemptAt: iso(m.lastAttemptAt),
      lastError: m.lastError,
      attemptLog: m.attemptLog,
      summary: view.summary,
    };
  }
  const left = view.left;
  if (left?.left !== 'delivered') throw new Error(`${holdId}: a message that left it is delivered, or has a delivery of its own`);
  return {
    ...common,
    kind: left.kind,
    qos: left.qos,
    state: 'delivered',
    attempts: left.attempts,
    firstAttemptAt: null,
    lastAttemptAt: iso(left.at),
    lastError: null,
    attemptLog: [],
    summary: `delivered from ${holdId} at attempt ${left.attempts} (${left.code})`,
  };
}

/**
 * Takes a held message out of its hold into a delivery of its own that starts with the control applied (paused,
 * attempting at once, or waiting for the caller's cancel), carrying its attempts; the hold answers once that
 * delivery has started. False when the message no longer waits there (it left meanwhile).
 */
export async function takeOut(client: WorkflowClient, found: FoundHeld, control: TakeOut): Promise<boolean> {
  try {
    await client.getHandle<HoldWorkflow>(found.holdId).executeUpdate(takeOutUpdate, { args: [found.deliveryId, control] });
    return true;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) return false;
    throw err;
  }
}

/** How long a call on a delivery just handed over from a hold is retried while Temporal does not find it yet. */
const VISIBLE_WITHIN_MS = 5_000;

/** Runs `fn` on a delivery just started from a hold, again while its workflow is not found yet. */
export async function onceVisible<T>(fn: () => Promise<T>): Promise<T> {
  const until = Date.now() + VISIBLE_WITHIN_MS;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError) || Date.now() > until) throw err;
      await sleep(200);
    }
  }
}

/** Polling a hold for a message starts this often, and backs off to this (it leaves when its endpoint recovers). */
const POLL_FIRST_MS = 250;
const POLL_MAX_MS = 5_000;

/**
 * Waits until a message left its hold: delivered there, or handed over to its own delivery. A hold that has
 * completed says it in its result.
 */
export async function heldEnd(client: WorkflowClient, holdId: string, deliveryId: string): Promise<HeldEnd> {
  const hold = client.getHandle<HoldWorkflow>(holdId);
  for (let delay = POLL_FIRST_MS; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
    const end = await leftNow(hold, deliveryId);
    if (end) return end;
    await sleep(delay);
  }
}

/** How the message left its hold, null while it waits there. */
async function leftNow(hold: WorkflowHandle<HoldWorkflow>, deliveryId: string): Promise<HeldEnd | null> {
  const notHeld = () => new Error(`${hold.workflowId} never held ${deliveryId}`);
  if ((await hold.describe()).status.name !== 'RUNNING') return (await hold.result()).left[deliveryId] ?? Promise.reject(notHeld());
  const view = await hold.query(heldQuery, deliveryId);
  if (!view) throw notHeld();
  return view.left;
}
