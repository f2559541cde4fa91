import type { Delivery } from '../delivery/types';
import type { OperationalEvent } from '../endpoints/operational-events';
import type { CommandSubscription, ReceivedCommand } from '../subscription/types';
import type { BatchResult, BatchWorkflowInput } from './batch';
import type { HandOverWhy, HeldMessage, ReleaseEnd, ReleaseInput } from './hold';
import type { AttemptSuccess, RetryEnd, RetryInput, RetryProgress, SendOptions } from './attempts';
import type { ArrivalCheck } from './ordering';
import type { HandOff, HoldEnd, HoldOptions } from './subscription';

/*
 * The activities as the workflows call them: every activity's signature.
 * The worker's wiring (`createActivities`) is declared to return this, so the compiler holds both sides to it.
 */

/**
 * Every activity the worker registers. An activity's name is part of the command a workflow records: renaming
 * one changes the command sequence (CONTRIBUTING.md, "Why workflow code is special").
 */
export interface Activities {
  /** One attempt: send, classify, and turn a failure into an ApplicationFailure of its class. */
  sendAttempt(delivery: Delivery, attemptNumber: number, options?: SendOptions): Promise<AttemptSuccess>;
  /** A delivery's retries as the activity's own retries on the server (docs/retries.md). */
  retryDelivery(input: RetryInput): Promise<RetryEnd>;
  /** A batch's first attempts, handing each message not delivered at once to a delivery of its own (docs/batches.md). */
  firstAttempts(input: BatchWorkflowInput): Promise<BatchResult>;
  /**
   * A single submit's first attempt, started as a standalone activity (no workflow): a batch of one, as
   * `firstAttempts` makes it (docs/batches.md, "A single submit").
   */
  firstAttempt(input: BatchWorkflowInput): Promise<BatchResult>;
  /** Sends what waits in an outage hold at the endpoint's recovery pace, reporting to the hold (docs/endpoint-health.md, "Outages"). */
  releaseHeld(input: ReleaseInput): Promise<ReleaseEnd>;
  /** Starts a held message's own delivery, carrying its attempts (a dead letter when it ended in the hold). */
  handOverHeld(message: HeldMessage, why: HandOverWhy): Promise<{ deliveryId: string; created: boolean }>;
  /** A local activity: the retrying activity's progress, null when unknown. */
  retryProgress(workflowId: string): Promise<RetryProgress | null>;
  /** What became of an ordering key's head whose delivery has not said it started (docs/ordering.md). */
  orderingArrival(deliveryId: string, via?: string): Promise<ArrivalCheck>;
  /** Operational events told to the operator URLs; answers with the ids of the deliveries it started. */
  announceEvents(events: OperationalEvent[]): Promise<string[]>;
  /** Holds a device's command subscription until `holdForMs` has passed, or fails when it is lost. */
  holdSubscription(sub: CommandSubscription, options: HoldOptions): Promise<HoldEnd>;
  /** Hands one command to the callback, classified like a delivery attempt. */
  handCommand(sub: CommandSubscription, command: ReceivedCommand, attempt: number): Promise<HandOff>;
  /** Ends a stopped subscription's session at the broker. */
  releaseSubscription(sub: CommandSubscription): Promise<void>;
}
