/** A delivery's workflow id: readable in the UI, and the idempotency key (same message id → same delivery). */
export function deliveryIdOf(tenant: string, device: string, messageId: string): string {
  return `delivery/${tenant}/${device}/${messageId}`;
}

/**
 * The tenant of what the operator's own configuration sends or reads, not a producer's: operational events
 * (activities/operational-events.ts) and the bridge's broker login. A secret they use names it in "tenants".
 */
export const OPERATOR_TENANT = 'redeliver';

/** The sequencer of an ordering key (workflows/ordering.ts): one per tenant and key, its deliveries' FIFO. */
export function orderingWorkflowId(tenant: string, key: string): string {
  return `ordering/${tenant}/${key}`;
}

/**
 * An endpoint's workflow id (workflows/endpoint.ts): one per endpoint (host[:port]) and task queue — the
 * workers of a task queue share its budget and report to it — named `endpoint/<host:port>` on the default
 * queue, `endpoint/<queue>/<host:port>` on others.
 */
export function endpointWorkflowId(endpoint: string, taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? `endpoint/${endpoint}` : `endpoint/${taskQueue}/${endpoint}`;
}

/**
 * A tenant's dead-letter aggregator (workflows/tenant-events.ts): one per tenant and task queue, named
 * `events/<tenant>` on the default queue, `events/<queue>/<tenant>` on others, as endpoints' are.
 */
export function tenantEventsWorkflowId(tenant: string, taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? `events/${tenant}` : `events/${taskQueue}/${tenant}`;
}

/** The task queue workers poll and deliveries run on, unless configured otherwise. */
export const DEFAULT_TASK_QUEUE = 'redeliver';
