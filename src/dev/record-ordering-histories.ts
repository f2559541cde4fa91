/**
 * The recorded histories of ordering keys (`npm run record-histories` calls this; docs/ordering.md): a key whose head
 * fails once and is delivered, with a delivery queued behind it; and a key stopped by a dead letter, then
 * released. Each delivery's history and the key's sequencer's history so far.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DeliveryHandle, Redeliver } from '../client/index';
import { orderingWorkflowId } from '../contract';
import type { DeliveryInput } from '../delivery/types';
import { historyFileText } from '../temporal/sdk-adapter';

export const ORDERING_SCENARIOS = ['ordered', 'ordered-stopped', 'ordered-continued'] as const;

const FAST = { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' } as const;

export async function recordOrderingHistories(redeliver: Redeliver, endpointUrl: string, outDir: string, only: string[]): Promise<void> {
  const wanted = (name: string) => only.length === 0 || only.includes(name);
  const save = async (workflowId: string, file: string) => {
    const history = await redeliver.client.workflow.getHandle(workflowId).fetchHistory();
    writeFileSync(path.join(outDir, file), historyFileText(history));
    return file;
  };
  const message = (key: string, n: number, target: string): DeliveryInput => ({
    kind: 'event',
    tenant: 'fixtures',
    device: 'device-1',
    orderingKey: key,
    messageId: `${key}-${n}`,
    payload: { n },
    target: `${endpointUrl}${target}`,
    policy: FAST,
  });
  const results = (handles: DeliveryHandle[]) => Promise.all(handles.map((h) => h.result()));

  if (wanted('ordered')) {
    // the head fails once (a retry on the server), the second waits queued behind it
    const key = 'ordered';
    const handles = [
      await redeliver.submit(message(key, 1, '/ordered?fail=1&status=503')),
      await redeliver.submit(message(key, 2, '/ordered')),
    ];
    const outcomes = (await results(handles)).map((r) => r.outcome);
    const files = [
      await save(handles[0]!.deliveryId, 'deliveryWorkflow_ordered-head.json'),
      await save(handles[1]!.deliveryId, 'deliveryWorkflow_ordered-queued.json'),
      await save(orderingWorkflowId('fixtures', key), 'orderingWorkflow_ordered.json'),
    ];
    console.log(`ordered: ${outcomes.join(', ')} → ${files.join(', ')}`);
  }

  if (wanted('ordered-continued')) {
    // a sequencer with a short history continues as new while deliveries are queued: its first run and its last
    const key = 'ordered-continued';
    const workflowId = orderingWorkflowId('fixtures', key);
    await redeliver.client.workflow.start('orderingWorkflow', {
      workflowId,
      taskQueue: redeliver.taskQueue,
      args: [{ tenant: 'fixtures', key, historyLimit: 40 }],
    });
    const handles = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => redeliver.submit(message(key, n, '/ordered'))));
    const outcomes = (await results(handles)).map((r) => r.outcome);
    const runs: string[] = [];
    for await (const e of redeliver.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.unshift(e.runId);
    const files: string[] = [];
    for (const [runId, file] of [
      [runs[0]!, 'orderingWorkflow_continued-first-run.json'],
      [runs[runs.length - 1]!, 'orderingWorkflow_continued-last-run.json'],
    ] as const) {
      const history = await redeliver.client.workflow.getHandle(workflowId, runId).fetchHistory();
      writeFileSync(path.join(outDir, file), historyFileText(history));
      files.push(file);
    }
    console.log(`ordered-continued: ${outcomes.join(', ')} in ${runs.length} runs of the sequencer → ${files.join(', ')}`);
  }

  if (wanted('ordered-stopped')) {
    // the head is refused (a dead letter): the key stops until released, then the second goes
    const key = 'ordered-stopped';
    const handles = [
      await redeliver.submit(message(key, 1, '/refused?fail=99&status=400')),
      await redeliver.submit(message(key, 2, '/ordered')),
    ];
    await handles[0]!.result();
    while ((await redeliver.ordering.status('fixtures', key)).state !== 'blocked') await new Promise((r) => setTimeout(r, 50));
    await redeliver.ordering.release('fixtures', key);
    const outcomes = (await results(handles)).map((r) => r.outcome);
    const files = [
      await save(handles[1]!.deliveryId, 'deliveryWorkflow_ordered-behind-dead-letter.json'),
      await save(orderingWorkflowId('fixtures', key), 'orderingWorkflow_stopped-released.json'),
    ];
    console.log(`ordered-stopped: ${outcomes.join(', ')} → ${files.join(', ')}`);
  }
}
