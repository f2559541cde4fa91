import { DEFAULT_TASK_QUEUE } from '../delivery/ids';

/* The ids of the workflows other than a delivery's (whose id is the delivery id): whoever starts, signals or looks one up builds it here. */

/** The sequencer of an ordering key (docs/ordering.md): one per tenant and key, its deliveries' FIFO. */
export function orderingWorkflowId(tenant: string, key: string): string {
  return `ordering/${tenant}/${key}`;
}

/**
 * An endpoint's workflow id (docs/endpoint-health.md): one per endpoint (host[:port]) and task queue — the
 * workers of a task queue share its budget and report to it — named `endpoint/<host:port>` on the default
 * queue, `endpoint/<queue>/<host:port>` on others.
 */
export function endpointWorkflowId(endpoint: string, taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? `endpoint/${endpoint}` : `endpoint/${taskQueue}/${endpoint}`;
}

/**
 * A tenant's dead-letter aggregator (docs/endpoint-health.md, "Operational events"): one per tenant and task queue, named
 * `events/<tenant>` on the default queue, `events/<queue>/<tenant>` on others, as endpoints' are.
 */
export function tenantEventsWorkflowId(tenant: string, taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? `events/${tenant}` : `events/${taskQueue}/${tenant}`;
}

/** A batch's workflow id: one per tenant and batch id, so that a batch resubmitted is not started twice. */
export function batchWorkflowId(tenant: string, batchId: string): string {
  return `batch/${tenant}/${batchId}`;
}

/** A batch named by its workflow id (batchWorkflowId), as a message's status names the batch it came in. */
export function batchNamed(workflowId: string): { batchId: string; workflowId: string } {
  return { batchId: workflowId.split('/').slice(2).join('/'), workflowId };
}

/**
 * A single submit's first attempt, a standalone activity (docs/batches.md, "A single submit"): its activity id is the
 * delivery id (activities and workflows are separate id spaces); the deliveries and holds it hands a message to
 * name it by this.
 */
export function firstAttemptSource(deliveryId: string): string {
  return `first-attempt/${deliveryId}`;
}

/** Whether a delivery or hold was handed its message by a batch (a batch workflow id), not a single submit's first attempt. */
export function isBatchSource(source: string): boolean {
  return source.startsWith('batch/');
}

/**
 * An outage hold's workflow id (docs/endpoint-health.md, "Outages"): one per tenant, endpoint and generation, named
 * `hold/<tenant>/<endpoint>/<generation>` on the default queue, `hold/<queue>/<tenant>/<endpoint>/<generation>` on others.
 */
export function holdWorkflowId(tenant: string, endpoint: string, generation: number, taskQueue: string): string {
  const queue = taskQueue === DEFAULT_TASK_QUEUE ? '' : `${taskQueue}/`;
  return `hold/${queue}${tenant}/${endpoint}/${generation}`;
}
