import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { useHarnessAndReceiver } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const env = useHarnessAndReceiver();

test('50 concurrent submits of the same message id, from 5 producers: one workflow, one delivery', async () => {
  const { h, receiver } = env;
  // five producers with connections of their own, ten submits each, all at once
  const connections = await Promise.all(Array.from({ length: 5 }, () => connectClient({ address: testAddress() })));
  const producers = connections.map((connection) => new Redeliver(new Client({ connection }), { taskQueue: h.taskQueue }));
  receiver.route('/once', ({ nth }) => (nth === 1 ? { status: 503 } : { status: 202 }));
  const input: DeliveryInput = {
    kind: 'event',
    tenant: 'acme',
    device: 'sensor-1',
    messageId: randomUUID(),
    payload: { t: 1 },
    target: `${receiver.url}/once`,
  };
  try {
    const handles = await Promise.all(Array.from({ length: 50 }, (_, i) => producers[i % 5]!.submit(input)));

    expect(new Set(handles.map((handle) => handle.deliveryId)).size).toBe(1);
    expect(handles.filter((handle) => handle.created)).toHaveLength(1);
    const runIds = await Promise.all(handles.map(async (handle) => (await handle.workflow.describe()).runId));
    expect(new Set(runIds).size).toBe(1);
    expect(await handles[0]!.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });
    const count = () => h.client.workflow.count(`WorkflowId = '${handles[0]!.deliveryId}'`).then((c) => c.count);
    await waitFor(count, (n) => n >= 1, 10_000, 'the delivery in the visibility store');
    expect(await count()).toBe(1);
    // the receiver: two attempts of one message, one of them accepted
    expect(receiver.of(input.messageId!).map((r) => r.outcome)).toEqual([503, 202]);
  } finally {
    await Promise.all(connections.map((c) => c.close()));
  }
});
