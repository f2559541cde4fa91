/**
 * The recorded histories of batches (`npm run record-histories` calls this; docs/batches.md): a batch whose messages
 * are all delivered at once (and the same on the workflow that passes its input through unread); one where some fail their first attempt and are handed over to deliveries of their
 * own (and one of those deliveries, which starts from the batch's attempt: handed-over-first-attempt); and one
 * with an ordered message, queued on its key rather than attempted. And a single submit whose first attempt (a
 * standalone activity, a batch of one) failed: the delivery it was handed to (first-attempt-handed-over).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redeliver } from '../client/index';
import type { DeliveryInput } from '../delivery/types';
import { historyFileText } from '../temporal/sdk-adapter';

export const BATCH_SCENARIOS = [
  'batch-delivered',
  'batch-passed-through',
  'batch-handed-over',
  'batch-ordered',
  'first-attempt-handed-over',
] as const;

const FAST = { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' } as const;

export async function recordBatchHistories(redeliver: Redeliver, endpointUrl: string, outDir: string, only: string[]): Promise<void> {
  const wanted = (name: string) => only.length === 0 || only.includes(name);
  const save = async (workflowId: string, file: string) => {
    const history = await redeliver.client.workflow.getHandle(workflowId).fetchHistory();
    writeFileSync(path.join(outDir, file), historyFileText(history));
    return file;
  };
  const message = (id: string, target: string, extra: Partial<DeliveryInput> = {}): DeliveryInput => ({
    kind: 'event',
    tenant: 'fixtures',
    device: 'device-1',
    messageId: id,
    payload: { id },
    target: `${endpointUrl}${target}`,
    policy: FAST,
    ...extra,
  });
  const run = async (scenario: string, inputs: DeliveryInput[]) => {
    const submission = await redeliver.submitBatch(inputs, { batchId: scenario });
    const outcomes = await submission.outcomes();
    const batch = (await submission.batches[0]!.result()).results;
    return { workflowId: submission.batches[0]!.workflowId, batch, outcomes: outcomes.map((o) => o.outcome) };
  };

  if (wanted('batch-delivered')) {
    const { workflowId, outcomes } = await run(
      'batch-delivered',
      [1, 2, 3].map((n) => message(`batch-delivered-${n}`, '/batch')),
    );
    console.log(`batch-delivered: ${outcomes.join(', ')} → ${await save(workflowId, 'batchWorkflow_delivered.json')}`);
  }

  if (wanted('batch-passed-through')) {
    // as batch-delivered, on the workflow that passes its input and its activity's result through unread (RawValue),
    // its memo telling its size: batchWorkflow_delivered.json is a batch from before, whose memo did not
    const { workflowId, outcomes } = await run(
      'batch-passed-through',
      [1, 2, 3].map((n) => message(`batch-passed-through-${n}`, '/batch')),
    );
    console.log(`batch-passed-through: ${outcomes.join(', ')} → ${await save(workflowId, 'batchWorkflow_passed-through.json')}`);
  }

  if (wanted('batch-handed-over')) {
    // the second and third fail their first attempt (the batch's) and are delivered by their own deliveries
    const { workflowId, batch, outcomes } = await run('batch-handed-over', [
      message('batch-handed-over-1', '/batch'),
      message('batch-handed-over-2', '/batch-flaky?fail=1&status=503'),
      message('batch-handed-over-3', '/batch-down?fail=2&status=502'),
    ]);
    const handedOver = batch.find((r) => r.disposition === 'handed-over')!;
    const files = [
      await save(workflowId, 'batchWorkflow_handed-over.json'),
      await save(handedOver.deliveryId, 'deliveryWorkflow_batch-handed-over.json'),
    ];
    console.log(`batch-handed-over: ${outcomes.join(', ')} → ${files.join(', ')}`);
  }

  if (wanted('first-attempt-handed-over')) {
    // a single submit's first attempt, a standalone activity (docs/batches.md, "A single submit"), fails: its delivery starts from it
    const single = new Redeliver(redeliver.client, { taskQueue: redeliver.taskQueue, singleSubmit: 'standalone' });
    const handle = await single.submit(message('first-attempt-handed-over', '/first-flaky?fail=1&status=503'));
    const { outcome, attempts } = await handle.result();
    const file = await save(handle.deliveryId, 'deliveryWorkflow_first-attempt-handed-over.json');
    console.log(`first-attempt-handed-over: ${outcome} after ${attempts} attempt(s) → ${file}`);
  }

  if (wanted('batch-ordered')) {
    // an ordered message is not attempted by the batch: its delivery starts at once and goes in its key's turn
    const { workflowId, outcomes } = await run('batch-ordered', [
      message('batch-ordered-1', '/batch'),
      message('batch-ordered-2', '/batch', { orderingKey: 'batch-ordered' }),
    ]);
    console.log(`batch-ordered: ${outcomes.join(', ')} → ${await save(workflowId, 'batchWorkflow_ordered.json')}`);
  }
}
