import { proxyActivities } from '@temporalio/workflow';
import type { Activities, BatchResult, BatchWorkflowInput } from '../contract';

/**
 * A batch (docs/batches.md): accepted in one start, it makes every message's first attempt in one activity,
 * which hands each message not delivered at once to a delivery of its own. Its history is the same dozen
 * events whatever its size; its result lists each message's first attempt and where it went.
 */
export async function batchWorkflow(input: BatchWorkflowInput): Promise<BatchResult> {
  const { firstAttempts } = proxyActivities<Activities>({
    // the activity heartbeats every 2 s: a lost worker is noticed within this, and the batch goes on elsewhere
    heartbeatTimeout: '20s',
    // bounded by the number of messages and their timeouts, not known in advance: the heartbeat is the guard
    startToCloseTimeout: '1 day',
    // until done: a message accepted in a batch is never dropped because a worker or Temporal was away
    retry: { initialInterval: '1s', maximumInterval: '30s' },
    summary: `first attempts of ${input.deliveries.length} messages`,
  });
  return firstAttempts(input);
}
