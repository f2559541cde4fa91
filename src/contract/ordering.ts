import type { Outcome } from '../delivery/types';

/*
 * An ordering key's protocol (docs/ordering.md): what the client, a batch's activity and the deliveries send
 * its sequencer, what it answers, and what it carries to its next run.
 */

export interface EnqueueRequest {
  /** In submit order. */
  deliveryIds: string[];
  /** The batch's workflow id when a batch starts these deliveries: while it runs, a delivery not found yet is still coming. */
  via?: string;
  /** A redrive: the dead letter that stopped the key takes its place back at the head. */
  redrive?: boolean;
}

/** Where a delivery's place is: 0 the head (admitted once its delivery has started), n the n-th behind it. */
export interface Place {
  deliveryId: string;
  position: number;
  /** The place just before it: what it waits for (null at the head). */
  behind: string | null;
  /** Held already: a resubmit keeps its first place. */
  existing: boolean;
}

export interface Blocked {
  deliveryId: string;
  outcome: Outcome;
  /** Epoch ms. */
  at: number;
}

/** From the sequencer to a delivery of its key: its turn has come, or what it is queued behind. */
export type OrderingNotice =
  { admit: true } | { admit: false; behind: string | null; blockedBy: { deliveryId: string; outcome: Outcome } | null };

export interface OrderingEntry {
  deliveryId: string;
  /** The how-manieth place of the key this was: the queue is in this order. */
  seq: number;
  /** Its delivery has started and said so: a notice reaches it. */
  arrived: boolean;
  /** When the place was taken (epoch ms). */
  at: number;
  via?: string;
}

export interface OrderingHead extends OrderingEntry {
  admitted: boolean;
  /** When to look its delivery up if it has not arrived by then. */
  checkAt: number;
  /** A redrive's place: dropped (its run never started), the key is blocked by this again. */
  restores?: Blocked;
}

/** What a run hands to the next when it continues as new. */
export interface OrderingCarried {
  run: number;
  enqueued: number;
  passed: number;
  head: OrderingHead | null;
  queue: OrderingEntry[];
  blocked: Blocked | null;
  /** Notices not sent yet. */
  notices: [string, OrderingNotice][];
}

/** What an ordered delivery was told of its place when it started (DeliveryWorkflowInput.place). */
export interface StartPlace {
  position: number;
  behind: string | null;
}

export interface OrderingWorkflowInput {
  tenant: string;
  key: string;
  carried?: OrderingCarried;
  /** Continue as new once the history has this many events (default 4,000). */
  historyLimit?: number;
}

/** What an arrival check found of a head's delivery (the `orderingArrival` activity). */
export type ArrivalCheck = 'running' | 'closed' | 'starting' | 'missing';

/** The key as `redeliver ordering status` and `list --ordering-key` show it. */
export interface OrderingStatus {
  tenant: string;
  key: string;
  /** idle: nothing queued; starting: the head's delivery has not started yet; delivering: the head's turn; blocked: stopped by a dead letter. */
  state: 'idle' | 'starting' | 'delivering' | 'blocked';
  head: { deliveryId: string; admitted: boolean } | null;
  blocked: { deliveryId: string; outcome: Outcome; at: string } | null;
  /** Places behind the head. */
  queued: number;
  /** The first of them, in order; `started`: its delivery has started (it shows `queued`). */
  queue: { deliveryId: string; started: boolean }[];
  /** Places taken and places passed (their delivery ended, or was dropped), since the key's sequencer started. */
  enqueued: number;
  passed: number;
  run: number;
  summary: string;
}

/** orderingWorkflow's type, for typed starts and handles. */
export type OrderingWorkflow = (input: OrderingWorkflowInput) => Promise<OrderingStatus>;
