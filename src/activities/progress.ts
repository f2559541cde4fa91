import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import type { LoadedDataConverter } from '@temporalio/common';
import { pendingActivityHeartbeat } from '../temporal/sdk-adapter';
import type { RetryProgress } from '../contract';

/** The retrying activity's type, as Temporal lists it among a workflow's pending activities. */
const RETRY_ACTIVITY = 'retryDelivery';

/**
 * Where a delivery's retrying stands: the progress its `retryDelivery` activity saved with its last
 * heartbeat, read from Temporal's description of the workflow. The workflow never sees those
 * heartbeats (they cost no history event), so it asks before it stops the activity (pause, retry now),
 * and the client asks for a live status.
 */
export async function readRetryProgress(client: Client, workflowId: string): Promise<RetryProgress | null> {
  return retryProgressOf(client.options.loadedDataConverter, await client.workflow.getHandle(workflowId).describe());
}

/** The retrying activity's progress in a description of its workflow; null when it is not retrying. */
export async function retryProgressOf(
  converter: LoadedDataConverter,
  description: WorkflowExecutionDescription,
): Promise<RetryProgress | null> {
  return pendingActivityHeartbeat<RetryProgress>(converter, description, RETRY_ACTIVITY);
}

export function createProgressActivities(client: Client | null) {
  return {
    /** A local activity of the delivery workflow: its retrying activity's progress, null when unknown. */
    async retryProgress(workflowId: string): Promise<RetryProgress | null> {
      return client ? readRetryProgress(client, workflowId) : null;
    },
  };
}
