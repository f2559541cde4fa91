import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AttemptError, AttemptRecord, Delivery, MessageKind, Outcome } from '../delivery/types';

/*
 * An outage hold (docs/endpoint-health.md, "Outages"): while an endpoint fails, the messages of batches whose first
 * attempt failed because of it wait together in a hold — one workflow per tenant, endpoint and generation — instead
 * of each becoming a delivery workflow. The batch's activity hands them in with one update per batch; the hold's
 * release activity sends them when the endpoint answers again, at the pace the worker's recovery pacer allows.
 * A message leaves a hold delivered, or handed over to a delivery of its own (a dead letter, a 4xx, an operator's
 * control), carrying the attempts it made there.
 */

/** A message waiting in a hold, with what its attempts so far taught (attempt 1 is its batch's first attempt). */
export interface HeldMessage {
  delivery: Delivery;
  /** The workflow id of the batch it came in. */
  batch: string;
  /** Epoch ms: when it joined the hold. */
  heldAt: number;
  /** 0 for a message held without an attempt (its endpoint was failing when its batch came to it). */
  attempts: number;
  /** Epoch ms: its first attempt, or when it was held unsent (its max age runs from there). */
  firstAttemptAt: number;
  lastAttemptAt: number | null;
  lastError: AttemptError | null;
  /** Its last attempts, most recent last (at most ATTEMPT_LOG_SIZE). */
  attemptLog: AttemptRecord[];
}

/** A hold's workflow input: one generation of one tenant's hold for one endpoint. */
export interface HoldInput {
  tenant: string;
  endpoint: string;
  generation: number;
  /** What the previous run still held, when it continued as new. */
  carried?: HoldCarried;
  /** Continue as new once the history has this many events. */
  historyLimit?: number;
}

export interface HoldCarried {
  waiting: HeldMessage[];
  left: Record<string, HeldEnd>;
  received: number;
  bytes: number;
  sealed: boolean;
}

/** How a message left a hold: delivered there, or handed over to its own delivery (which holds its outcome). */
export interface HeldEnd {
  left: 'delivered' | 'handed-over';
  attempts: number;
  /** The last attempt's code (`http-202`, …). */
  code: string;
  /** Epoch ms. */
  at: number;
  /** The message's kind and QoS: its status by id, once it left, still says them. */
  kind: MessageKind;
  qos: 0 | 1;
}

/** What a hold returns when it completes: how each of its messages left it, by delivery id. */
export interface HoldResult {
  tenant: string;
  endpoint: string;
  generation: number;
  left: Record<string, HeldEnd>;
}

/** A hold takes at most this many messages, and this many bytes of them (JSON), over its life: its history stays bounded. */
export const HOLD_MAX_MESSAGES = 5_000;
export const HOLD_MAX_BYTES = 1_536 * 1024;
/** A hold that has held nothing for this long, and holds nothing, completes; a later outage starts a new run. */
export const HOLD_IDLE_MS = 60_000;
/** The hold update's validator refuses with this when the hold is sealed or the messages would not fit: try the next generation. */
export const HOLD_FULL = 'HoldFull';

/** What a hold answers to the batch that handed messages in. */
export interface HoldAnswer {
  /** Newly held. */
  held: number;
  /** Already held, or already left (a batch's activity run again after a lost worker). */
  already: number;
}

/** What the release activity reports of one message: the attempt it made (if any), and where the message is now. */
export interface HoldReport {
  deliveryId: string;
  attempt: AttemptRecord | null;
  /** Set when the attempt failed. */
  error?: AttemptError;
  now: 'waiting' | 'delivered' | 'handed-over';
}

/**
 * One page of what the release activity sends next, in the hold's order (most urgent first: kind, expiry, age),
 * after `after`: a release round passes over the hold once, so that each message gets at most one attempt per round.
 */
export interface DuePage {
  limit: number;
  after: DueCursor | null;
}

/** A place in the hold's order: [rank of the kind, expiry (epoch ms, or null), first attempt (epoch ms), delivery id]. */
export type DueCursor = [number, number | null, number, string];

export interface DueAnswer {
  messages: HeldMessage[];
  /** Where the next page starts; null when this page reached the end. */
  next: DueCursor | null;
}

/** One held message as `status` shows it. */
export interface HeldView {
  holdId: string;
  /** While it waits (null once it left). */
  message: (Omit<HeldMessage, 'delivery'> & Pick<Delivery, 'deliveryId' | 'messageId' | 'kind' | 'qos'>) | null;
  /** Set once it left the hold. */
  left: HeldEnd | null;
  /** In words: what it waits for (the endpoint's recovery, the pace). */
  summary: string;
}

/** What the hold shows (its query, and its details in the UI). */
export interface HoldSummary {
  tenant: string;
  endpoint: string;
  generation: number;
  waiting: number;
  received: number;
  sealed: boolean;
  /** Epoch ms of the oldest waiting message's arrival, null when none waits. */
  oldestHeldAt: number | null;
  /** The first waiting messages, most urgent first: their delivery id and their expiry (epoch ms, null = none). */
  first: Array<{ deliveryId: string; expiresAt: number | null }>;
}

/** The release activity's input and end. */
export interface ReleaseInput {
  holdId: string;
  tenant: string;
  endpoint: string;
}

export interface ReleaseEnd {
  delivered: number;
  handedOver: number;
  /** Messages still waiting after this round (the round ends after a few minutes, so that the hold can continue as new). */
  waiting: boolean;
}

/** Why a held message leaves for a delivery of its own. */
export interface HandOverWhy {
  /** It ended in the hold: its delivery starts closed, as a dead letter with this outcome. */
  ended?: { outcome: Outcome; reason: string };
  /** Taken out by an operator's control on its id: its delivery starts with the control applied (TakeOut). */
  takenOut?: TakeOut;
}

/**
 * An operator's control on a held message, which takes it out to a delivery of its own: `pause` starts it paused;
 * `retryNow` starts it attempting at once; `cancel` starts it waiting a minute, for the caller to cancel it.
 */
export interface TakeOut {
  control: 'pause' | 'retryNow' | 'cancel';
  reason?: string;
}

/** Hands messages in (the batch's activity); refused with HOLD_FULL when they do not fit. */
export const holdUpdate = defineUpdate<HoldAnswer, [HeldMessage[]]>('hold');

/** The next messages to send (the release activity), most urgent first. */
export const dueQuery = defineQuery<DueAnswer, [DuePage]>('due');

/** What the release activity did with the messages it sent. */
export const releasedSignal = defineSignal<[HoldReport[]]>('released');

/** One message, by delivery id: null when the hold never had it. */
export const heldQuery = defineQuery<HeldView | null, [deliveryId: string]>('held');

/** The hold at a glance. */
export const holdSummaryQuery = defineQuery<HoldSummary>('summary');

/** Takes one message out to a delivery of its own (an operator's control on it); answers once that delivery started. */
export const takeOutUpdate = defineUpdate<{ deliveryId: string; created: boolean }, [deliveryId: string, takeOut: TakeOut]>('takeOut');

/** holdWorkflow's type, for typed starts and handles. */
export type HoldWorkflow = (input: HoldInput) => Promise<HoldResult>;
