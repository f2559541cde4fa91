import { log, metricMeter, patched, proxyActivities, proxySinks } from '@temporalio/workflow';
import type { Activities } from '../contract';
import type { Delivery, DeliveryResult } from '../delivery/types';
import { DEAD_LETTER_STATES } from '../delivery/filter';
import type { EndpointHealthState } from '../endpoints/health';
import {
  METRICS,
  STATE_VALUES,
  type DeadLetterOutcome,
  type DeadLetterSinks,
  type EndpointEvents,
  type OperationalEvent,
} from '../endpoints/operational-events';
import { OPERATIONAL_EVENTS } from './patches';

/** Starting the events' deliveries is quick; one that keeps failing is a bug, and must not hold the endpoint's loop for long. */
const { announceEvents } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { maximumInterval: '30s', maximumAttempts: 10 },
});

/** Sends the events due now; an event that cannot be sent is logged, and the endpoint goes on. */
export async function sendEvents(events: EndpointEvents, now: number): Promise<void> {
  const due = events.take(now);
  if (due.length === 0 || !patched(OPERATIONAL_EVENTS)) return;
  await announce(due);
}

/** Starts the events' deliveries; events that cannot be sent are logged, and the caller goes on. */
export async function announce(due: OperationalEvent[]): Promise<void> {
  try {
    await announceEvents(due);
  } catch (err) {
    log.error('operational events not sent', { events: due.map((e) => e.id), error: (err as Error).message });
  }
}

/** The endpoint's state as a gauge, and each change counted; neither is emitted on replay (the SDK's workflow metrics). */
export function measureState(endpoint: string, previous: EndpointHealthState | null, state: EndpointHealthState): void {
  metricMeter
    .createGauge(METRICS.state, 'int', undefined, 'endpoint health: 0 healthy, 1 recovering, 2 failing')
    .set(STATE_VALUES[state], { endpoint });
  if (previous !== null && previous !== state) countTransition(endpoint, state);
}

export function countTransition(endpoint: string, to: EndpointHealthState | 'disabled'): void {
  metricMeter.createCounter(METRICS.transitions, undefined, 'endpoint transitions, by the state it went to').add(1, { endpoint, to });
}

const { endpoints } = proxySinks<DeadLetterSinks>();

/** A delivery that ended a dead letter tells its worker, which reports it to its tenant's workflow (aggregated) and counts it. */
export function tellDeadLetter(delivery: Delivery, result: DeliveryResult): void {
  const outcome = result.outcome;
  if ((DEAD_LETTER_STATES as readonly string[]).includes(outcome))
    endpoints.deadLettered(delivery.endpoint, delivery.deliveryId, outcome as DeadLetterOutcome, Date.now(), delivery.tenant);
}
