import type { AttemptError, Delivery } from '../delivery/types';
import type { AttemptFailureDetails } from './attempts';
import type { DowntimeLedger } from '../subscription/downtime';
import type { CommandCounts, CommandRecord, CommandSubscription, ReceivedCommand, SubscriptionResult } from '../subscription/types';

/** What a run hands to the next when it continues as new; absent on the first run. */
export interface CarriedSubscription {
  run: number;
  holds: number;
  attempts: number;
  previousDelay: number | null;
  lastError: AttemptError | null;
  ledger: DowntimeLedger;
  counts: Omit<CommandCounts, 'queued'>;
  recent: CommandRecord[];
  /** Request ids already received: a command the broker sends again is handed over once. */
  seen: string[];
  /** Commands received and not handed over yet. */
  queue: ReceivedCommand[];
  seq: number;
}

export interface SubscriptionWorkflowInput {
  subscription: CommandSubscription;
  carried?: CarriedSubscription;
  /** Continue as new once the history has this many events (default 4,000). */
  historyLimit?: number;
  /** How long one run of the holding activity lasts before it ends by itself and a new one starts (default 1 day). */
  holdForMs?: number;
}

/** commandSubscriptionWorkflow's type, for typed starts and handles. */
export type CommandSubscriptionWorkflow = (input: SubscriptionWorkflowInput) => Promise<SubscriptionResult>;

export interface HoldOptions {
  /** The subscription's workflow, which the activity signals. */
  workflowId: string;
  /** Numbers this run of the activity: the workflow ignores a late "subscribed" from an earlier one. */
  hold: number;
  /** End by itself after this long, so the workflow can start a fresh one (and continue as new). */
  holdForMs: number;
}

/** A hold that ended by itself after `holdForMs`. Every other end is a failure (or a cancellation). */
export interface HoldEnd {
  at: number;
}

/** A failed hold: its classification, and when the subscription was lost (and had been made, if it was). */
export interface HoldFailureDetails extends AttemptFailureDetails {
  lostAt: number;
  subscribedAt: number | null;
}

/** The heartbeat of a hold: its last sign of life tells the workflow when a lost worker lost the subscription. */
export interface HoldHeartbeat {
  at: number;
  subscribedAt: number | null;
}

/** What handing one command to the callback gave. */
export interface HandOff {
  code: string;
  reason: string;
  durationMs: number;
  /** The callback's HTTP status. */
  httpStatus: number;
  /** The two-way command's response, ready to start as a delivery; null for a one-way command. */
  response: Delivery | null;
}
