import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ArrivalCheck } from '../contract';

/** The ordering keys' activity (docs/ordering.md): what a sequencer cannot ask Temporal itself. */
export function createOrderingActivities(client: Client | null) {
  const need = (): Client => {
    if (!client) throw new Error('ordering keys need the worker’s client: to look deliveries up');
    return client;
  };
  return {
    /**
     * A key's head whose delivery has not said it started: running (it will), ended (its place goes), not found but
     * its batch still running (it is coming), or missing (its submit failed half-way).
     */
    async orderingArrival(deliveryId: string, via?: string): Promise<ArrivalCheck> {
      const state = await executionState(need(), deliveryId);
      if (state !== 'missing') return state;
      return via !== undefined && (await executionState(need(), via)) === 'running' ? 'starting' : 'missing';
    },
  };
}

async function executionState(client: Client, workflowId: string): Promise<'running' | 'closed' | 'missing'> {
  try {
    const { status } = await client.workflow.getHandle(workflowId).describe();
    return status.name === 'RUNNING' ? 'running' : 'closed';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'missing';
    throw err;
  }
}
