import type { AttemptFailureDetails } from './attempts';
import type { Delivery, MessageKind } from '../delivery/types';
import type { StartPlace } from './ordering';
import { batchWorkflowId } from './ids';

/*
 * A batch: many messages of one tenant accepted in one Temporal start (docs/batches.md). Its workflow makes
 * every message's first attempt; a message delivered at once needs nothing more, every other one becomes its
 * own delivery carrying that attempt (FirstAttempt).
 */

/** What the batch workflow receives: validated deliveries, all of one tenant, each message id once. */
export interface BatchWorkflowInput {
  batchId: string;
  tenant: string;
  deliveries: Delivery[];
  /** Passed on to the deliveries the batch starts. */
  historyLimit?: number;
  /** The places its ordered messages took on their keys before it started, by delivery id (docs/ordering.md). */
  places?: Record<string, StartPlace>;
  /**
   * What makes these first attempts, as the deliveries and holds it hands messages to name it: the batch's workflow
   * id when absent; a single submit's standalone first attempt (docs/batches.md, "A single submit") its own.
   */
  source?: string;
}

/** Who makes a batch input's first attempts: its batch workflow, or a single submit's standalone activity. */
export function firstAttemptsSource(input: Pick<BatchWorkflowInput, 'tenant' | 'batchId' | 'source'>): string {
  return input.source ?? batchWorkflowId(input.tenant, input.batchId);
}

/** A first attempt a batch made and that failed: the delivery it hands the message to starts from it. */
export interface FirstAttempt {
  /** Epoch ms. */
  startedAt: number;
  endedAt: number;
  failure: AttemptFailureDetails;
}

/**
 * `delivered`: at once, nothing more to do. `handed-over`: its own delivery started with the first attempt (or existed).
 * `queued`: an ordered message, not attempted by the batch: its own delivery started at once, to go in its turn on its key.
 * `held`: its endpoint was failing: it waits with the others in an outage hold (`hold`), sent or not (code `held`).
 */
export type MessageDisposition = 'delivered' | 'handed-over' | 'queued' | 'held';

/** One message of a batch, in the batch's result. */
export interface MessageResult {
  messageId: string;
  deliveryId: string;
  disposition: MessageDisposition;
  /** The first attempt's code: `http-202`, `http-503`, `mqtt-puback`, `timeout`, …; `queued` for an ordered message. */
  code: string;
  /** ISO time the first attempt ended (an ordered message: when its delivery started). */
  at: string;
  /** A held message's outage hold (its workflow id): it is found, and steered, by its delivery id there. */
  hold?: string;
  /** Handed over to a delivery that already existed (the message id was used before): that delivery stands. */
  existing?: true;
  /** What the message was, for its status by id without the batch's input (absent from results before the message index). */
  kind?: MessageKind;
  qos?: 0 | 1;
  endpoint?: string;
}

export interface BatchResult {
  batchId: string;
  tenant: string;
  messages: number;
  delivered: number;
  handedOver: number;
  /** Waiting in outage holds (absent from batches before holds). */
  held?: number;
  /** In the order of the batch's deliveries. */
  results: MessageResult[];
}

/** The memo key of a batch's number of messages. */
export const BATCH_MEMO_MESSAGES = 'messages';

/**
 * A batch's memo: its contents' hash (a batch id given again for other messages is refused) and its number of
 * messages (the workflow names it in its activity's summary without reading its input; absent before).
 */
export interface BatchMemo {
  contents: string;
  [BATCH_MEMO_MESSAGES]?: number;
}

/** batchWorkflow's type, for typed starts and handles. */
export type BatchWorkflow = (input: BatchWorkflowInput) => Promise<BatchResult>;
