import type { AttemptError, AttemptRecord, Delivery, DeliveryResult, Outcome } from '../delivery/types';
import type { FirstAttempt } from './batch';
import type { StartPlace } from './ordering';

/** What a run hands to the next when it continues as new; absent on the first run. */
export interface CarriedState {
  run: number;
  attempts: number;
  firstAttemptAt: number | null;
  lastAttemptAt: number | null;
  /** When the next attempt is planned (epoch ms); null = at once. */
  nextAttemptAt: number | null;
  previousDelay: number | null;
  lastError: AttemptError | null;
  attemptLog: AttemptRecord[];
  /** Time spent paused so far: it does not count towards the max age. */
  pausedMs: number;
  pause: { reason: string; since: number } | null;
}

export interface DeliveryWorkflowInput {
  delivery: Delivery;
  carried?: CarriedState;
  /** Started by a batch whose first attempt failed: attempt 2 is next (absent on every other start). */
  firstAttempt?: FirstAttempt;
  /**
   * Started from an outage hold where the message ended (docs/endpoint-health.md, "Outages"), with `carried` holding
   * its attempts there: the delivery ends at once with this outcome, a dead letter like any other.
   */
  ended?: { outcome: Outcome; reason: string };
  /** An ordered delivery's place on its key, taken by the client before the start (absent when a batch started it). */
  place?: StartPlace;
  /** Continue as new once the history has this many events (default 4,000; Temporal warns at 10,240). */
  historyLimit?: number;
  /**
   * Set by every start since the endpoint limits: the first attempt may wait on the server for room at its
   * endpoint. A field rather than patched(), whose marker and search-attribute upsert would cost every delivery
   * two history events; runs started before it never had it and try once.
   */
  limited?: boolean;
}

/** deliveryWorkflow's type, for continue-as-new and for typed starts and handles. */
export type DeliveryWorkflow = (input: DeliveryWorkflowInput) => Promise<DeliveryResult>;
