import { createHash } from 'node:crypto';
import {
  type CarriedState,
  deliveryFacts,
  deliveryStartOptions,
  type DeliveryWorkflowInput,
  type FirstAttempt,
  type StartPlace,
} from '../contract';
import type { Delivery, DeliveryStateName, Outcome } from '../delivery/types';

/*
 * How a delivery's workflow is started, whoever starts it: Redeliver.submit and Redeliver.redrive, or a
 * batch handing over a message whose first attempt failed (docs/batches.md). One place, so that a
 * delivery reads the same in the UI and to `submit` (its fingerprint) however it began.
 */

/** Kept in the workflow's memo: what status needs of a closed delivery without reading its history. */
export interface DeliveryMemo {
  fingerprint: string;
  delivery: ReturnType<typeof deliveryFacts>;
  /** A redriven run: the dead letter's run, and the token of the redrive call that started it. */
  redriveOf?: string;
  redriveToken?: string;
  /** Started by this batch (its workflow id), which made the first attempt; or by a single submit's first attempt (firstAttemptSource). */
  batch?: string;
}

/** A redrive's start: the dead letter's run, and a token of its own that tells the caller the run it started. */
export interface Redrive {
  of: string;
  token: string;
}

export interface DeliveryStart {
  taskQueue: string;
  reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE';
  historyLimit?: number;
  redrive?: Redrive;
  /** A batch's failed first attempt (none for an ordered message, attempted in its turn), and the batch's workflow id. */
  handedOver?: HandedOver;
  /** An ordered delivery's place on its key, taken before the start: it shows what it waits for from the start. */
  place?: StartPlace;
}

/**
 * Where a delivery started by the system comes from: the batch it came in, with its batch's failed first attempt, or,
 * from an outage hold (`hold`), the attempts it made there (`carried`) and, if it ended there, how (`ended`).
 */
export interface HandedOver {
  batch: string;
  firstAttempt?: FirstAttempt;
  hold?: string;
  carried?: CarriedState;
  ended?: { outcome: Outcome; reason: string };
}

/** The options of `client.workflow.start('deliveryWorkflow', …)`, but for the redrive's request id (Redeliver.redrive). */
export function deliveryStart(delivery: Delivery, start: DeliveryStart) {
  const { redrive, handedOver } = start;
  const input: DeliveryWorkflowInput = {
    delivery,
    limited: true,
    ...(start.historyLimit && { historyLimit: start.historyLimit }),
    ...(handedOver?.firstAttempt && { firstAttempt: handedOver.firstAttempt }),
    ...(handedOver?.carried && { carried: handedOver.carried }),
    ...(handedOver?.ended && { ended: handedOver.ended }),
    ...(start.place && { place: { position: start.place.position, behind: start.place.behind } }),
  };
  const memo: DeliveryMemo = {
    fingerprint: fingerprintOf(delivery),
    delivery: deliveryFacts(delivery),
    ...(redrive && { redriveOf: redrive.of, redriveToken: redrive.token }),
    ...(handedOver && { batch: handedOver.batch }),
  };
  const note = redrive ? 'redriven' : handedOver ? `from ${handedOver.hold ?? handedOver.batch}` : undefined;
  return {
    ...deliveryStartOptions(delivery, start.reuse, note, startState(start), handedOver?.carried),
    taskQueue: start.taskQueue,
    // its activities inherit it: the task queue dispatches tenants' attempts fairly (docs/threat-model.md)
    priority: { fairnessKey: fairnessKeyOf(delivery.tenant) },
    args: [input] as [DeliveryWorkflowInput],
    memo: memo as unknown as Record<string, unknown>,
  };
}

/** Temporal's limit on a fairness key (bytes). */
const FAIRNESS_KEY_MAX = 64;

/**
 * The tenant as the task queue's fairness key: each tenant gets an equal share of the dispatch of
 * attempts when there is a backlog (needs `matching.enableFairness` on the server). A tenant id is
 * printable ASCII of up to 128 characters; one longer than the key may be keeps its start and a hash of the whole.
 */
export function fairnessKeyOf(tenant: string): string {
  if (tenant.length <= FAIRNESS_KEY_MAX) return tenant;
  return `${tenant.slice(0, 41)}~${createHash('sha256').update(tenant).digest('base64url').slice(0, 22)}`;
}

/** What makes two submissions "the same message": everything but the submit time. */
export function fingerprintOf(delivery: Delivery): string {
  const { submittedAt: _submittedAt, ...rest } = delivery;
  return createHash('sha256').update(JSON.stringify(rest)).digest('base64url').slice(0, 22);
}

/** The DeliveryState a delivery starts with: queued behind others of its key, or as it stood in the hold it came from. */
function startState(start: DeliveryStart): DeliveryStateName {
  const { handedOver } = start;
  if (handedOver?.ended) return handedOver.ended.outcome;
  if (handedOver?.carried) return handedOver.carried.pause ? 'paused' : 'waiting';
  return start.place?.position ? 'queued' : 'pending';
}
