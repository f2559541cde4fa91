import type { BreakerState, EndpointMode, EndpointSettings } from '../endpoints/controls';
import type { EndpointLedger, EndpointLedgerOptions } from '../endpoints/downtime';
import type { HealthLedger } from '../endpoints/health';
import type { EventsCarried } from '../endpoints/operational-events';
import type { EndpointRecording } from '../endpoints/recording';
import type { TenantEventsCarried } from '../endpoints/tenant-events';
import type { Timeline } from '../endpoints/timeline';
import type { AttemptOutcome, EndpointStatus, PaceView } from '../endpoints/types';

/*
 * An endpoint's workflow (docs/endpoint-health.md) and a tenant's dead-letter aggregator: what they start
 * with and carry to their next run.
 */

export interface EndpointCarried {
  run: number;
  ledger: EndpointLedger;
  health: HealthLedger;
  timeline: Timeline;
  /** The operator's settings (the endpoint's controls); absent in runs from before them. */
  controls?: ControlsCarried;
  /** Absent in runs carried over from before recordings were kept. */
  recording?: EndpointRecording;
  /** The operational events' sequence and the dead letters not told yet; absent in runs from before them. */
  events?: EventsCarried;
  workers: Record<string, number>;
  pending: AttemptOutcome[];
  heldBack: { second: number; count: number }[];
  lastReportAt: number;
  /** Each worker's latest recovery pace and when it came; absent in runs from before the pace was reported. */
  paces?: Record<string, { view: PaceView; at: number }>;
}

export interface EndpointWorkflowInput {
  endpoint: string;
  /** Downtime rules (defaults: the guide's 1 min, and 3 attempts within 3 min for a reconnection). */
  downtime?: EndpointLedgerOptions;
  carried?: EndpointCarried;
  historyLimit?: number;
}

/** What an endpoint's workflow carries to its next run about its controls. */
export interface ControlsCarried {
  settings: EndpointSettings;
  /** Absent in runs from before the breaker. */
  breaker?: BreakerState;
  mode?: EndpointMode;
}

/** endpointWorkflow's type, for typed starts and handles. */
export type EndpointWorkflow = (input: EndpointWorkflowInput) => Promise<EndpointStatus>;

export interface TenantEventsInput {
  tenant: string;
  /** Continue as new past this many history events (tests set it low). */
  historyLimit?: number;
  /** What the previous run knew: dead letters not told yet, the last event's time, the reports seen. */
  carried?: TenantEventsCarried;
}

/** tenantEventsWorkflow's type, for typed starts. */
export type TenantEventsWorkflow = (input: TenantEventsInput) => Promise<void>;
