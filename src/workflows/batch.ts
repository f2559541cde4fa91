import { defineWorkflowOptions, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { defaultPayloadConverter, RawValue, rawValueTypeInfo } from '@temporalio/common';
import { BATCH_MEMO_MESSAGES, type Activities, type BatchResult, type BatchWorkflowInput } from '../contract';

/**
 * A batch (docs/batches.md): accepted in one start, it makes every message's first attempt in one activity,
 * which hands each message not delivered at once to a delivery of its own. Its history is the same dozen
 * events whatever its size; its result lists each message's first attempt and where it went.
 *
 * The workflow passes its input to the activity, and the activity's result out, as they came (RawValue, see
 * below): it reads none of the messages, and the workflow thread (whose UTF-8 decoder and encoder are the SDK's
 * JavaScript ones) would otherwise decode and encode every message twice; at volume that was most of its work.
 */
export async function batchWorkflow(input: BatchWorkflowInput): Promise<BatchResult> {
  // a RawValue as this workflow is defined below; the input itself when called by a workflow defined otherwise
  const passed = input as BatchWorkflowInput | RawValue<BatchWorkflowInput>;
  const { firstAttempts } = proxyActivities<Activities>({
    // the activity heartbeats every 2 s: a lost worker is noticed within this, and the batch goes on elsewhere
    heartbeatTimeout: '20s',
    // bounded by the number of messages and their timeouts, not known in advance: the heartbeat is the guard
    startToCloseTimeout: '1 day',
    // until done: a message accepted in a batch is never dropped because a worker or Temporal was away
    retry: { initialInterval: '1s', maximumInterval: '30s' },
    summary: `first attempts of ${messagesIn(passed)} messages`,
    activityTypeInfo: { firstAttempts: { outputType: rawValueTypeInfo } },
  });
  return firstAttempts(passed as unknown as BatchWorkflowInput);
}

defineWorkflowOptions(batchWorkflow, { staticOptions: { typeInfo: { inputTypes: [rawValueTypeInfo], outputType: rawValueTypeInfo } } });

/** The batch's size, from its memo; a batch started before its memo said so is read for it. */
function messagesIn(passed: BatchWorkflowInput | RawValue<BatchWorkflowInput>): number {
  if (!(passed instanceof RawValue)) return passed.deliveries.length;
  const told = workflowInfo().memo?.[BATCH_MEMO_MESSAGES];
  if (typeof told === 'number') return told;
  return defaultPayloadConverter.fromPayload<BatchWorkflowInput>(passed.payload).deliveries.length;
}
