/**
 * The batcher (Redeliver.batcher) on the suite's dev server: one message at a time in, batches out; each
 * submit resolved once its batch is started, or rejected with why.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { batchWorkflowId } from '../../../src/contract';
import type { BatchReceipt } from '../../../src/batching/batcher';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { InvalidInputError } from '../../../src/errors';
import { storedBytes } from '../../../src/validation/limits';
import { useHarnessAndEndpoint } from '../../support/setup';
import { testAddress } from '../../support/temporal';

const env = useHarnessAndEndpoint();

const message = (device: string, extra: Partial<DeliveryInput> = {}): DeliveryInput => ({
  kind: 'telemetry',
  tenant: 'acme',
  device,
  messageId: randomUUID(),
  payload: { n: randomUUID() },
  target: `${env.endpoint.url}/batcher`,
  ...extra,
});
const newDevice = () => `b-${randomUUID().slice(0, 8)}`;
const requestsOf = (input: DeliveryInput) => env.endpoint.received.filter((r) => r.messageId === input.messageId);
const batchResult = (batchId: string) => env.h.client.workflow.getHandle(batchWorkflowId('acme', batchId)).result();
/** Receipts grouped by batch, in the order the batches were first named. */
const batchSizes = (receipts: BatchReceipt[]) => {
  const sizes = new Map<string, number>();
  for (const r of receipts) sizes.set(r.batchId, (sizes.get(r.batchId) ?? 0) + 1);
  return [...sizes.values()];
};
const fieldsOf = (err: unknown) => (err instanceof InvalidInputError ? [...new Set(err.problems.map((p) => p.field))] : err);
/** Whether a promise has settled by now (its callbacks run before this one's). */
const settled = (p: Promise<unknown>) =>
  Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => setImmediate(() => resolve(false))),
  ]);

test('a submit resolves once its batch is started: the batch workflow exists, and delivers the message', async () => {
  const batcher = env.h.redeliver.batcher({ linger: 10 });
  const input = message(newDevice());
  const receipt = await batcher.submit(input);
  expect(receipt).toMatchObject({ deliveryId: `delivery/acme/${input.device}/${input.messageId}`, created: true });
  const description = await env.h.client.workflow.getHandle(batchWorkflowId('acme', receipt.batchId)).describe();
  expect(description.type).toBe('batchWorkflow');
  expect(await batchResult(receipt.batchId)).toMatchObject({ messages: 1, delivered: 1 });
  expect(requestsOf(input)).toHaveLength(1);
  await batcher.close();
});

test('maxMessages cuts batches; what is left waits for linger, and close() flushes it; then submits are refused', async () => {
  const batcher = env.h.redeliver.batcher({ maxMessages: 3, linger: '1h' });
  const device = newDevice();
  const inputs = Array.from({ length: 7 }, () => message(device));
  const submits = inputs.map((i) => batcher.submit(i));
  const full = await Promise.all(submits.slice(0, 6));
  expect(batchSizes(full)).toEqual([3, 3]);
  // the seventh is alone in a batch that is neither full nor past its linger
  expect(await settled(submits[6]!)).toBe(false);
  await batcher.close();
  const last = await submits[6]!;
  expect(batchSizes([...full, last])).toEqual([3, 3, 1]);
  await expect(batcher.submit(message(device))).rejects.toThrow('the batcher is closed');

  const results = await Promise.all([...new Set([...full, last].map((r) => r.batchId))].map(batchResult));
  expect(results.map((r) => r.delivered)).toEqual([3, 3, 1]);
  for (const input of inputs) expect(requestsOf(input)).toHaveLength(1);
});

test('linger cuts batches: submits that come together share one, a later one gets its own', async () => {
  const batcher = env.h.redeliver.batcher({ linger: 50 });
  const device = newDevice();
  const together = await Promise.all([batcher.submit(message(device)), batcher.submit(message(device))]);
  const later = await batcher.submit(message(device));
  expect(batchSizes([...together, later])).toEqual([2, 1]);
  await batcher.close();
});

test('maxBytes cuts batches by the deliveries’ stored size', async () => {
  const device = newDevice();
  const inputs = Array.from({ length: 6 }, () => message(device, { payload: 'x'.repeat(2_000) }));
  const size = storedBytes(env.h.redeliver.validate(inputs[0]!)) + 1;
  const batcher = env.h.redeliver.batcher({ maxBytes: Math.floor(size * 2.5), linger: '1h' });
  const submits = inputs.map((i) => batcher.submit(i));
  await batcher.close();
  expect(batchSizes(await Promise.all(submits))).toEqual([2, 2, 2]);
});

test('bad input rejects only its own submit, naming the field; a message id pending with other contents too', async () => {
  const batcher = env.h.redeliver.batcher({ linger: '1h' });
  const device = newDevice();
  const good = message(device);
  const outcomes = await Promise.allSettled([
    batcher.submit(good),
    batcher.submit({ ...message(device), device: 'd 1' }),
    batcher.submit({ ...message(device), policy: { min: '-5s' } }),
    batcher.submit({ ...good }),
    batcher.submit({ ...good, payload: 'another message' }),
    batcher.close(),
  ]);
  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
  const [first, device1, policy, same, clash] = outcomes;
  expect(fieldsOf((device1 as PromiseRejectedResult).reason)).toEqual(['device']);
  expect(fieldsOf((policy as PromiseRejectedResult).reason)).toEqual(['policy.min']);
  expect(fieldsOf((clash as PromiseRejectedResult).reason)).toEqual(['messageId']);
  // the same message submitted twice while pending: one receipt, sent once
  expect((same as PromiseFulfilledResult<BatchReceipt>).value).toEqual((first as PromiseFulfilledResult<BatchReceipt>).value);
  expect(await batchResult((first as PromiseFulfilledResult<BatchReceipt>).value.batchId)).toMatchObject({ messages: 1, delivered: 1 });
  expect(requestsOf(good)).toHaveLength(1);
});

test('a batch whose start fails rejects its submits with the reason, and nothing is sent', async () => {
  // a namespace the server does not have: the start is refused, as a real misconfiguration would be
  const connection = await connectClient({ address: testAddress() });
  try {
    const nowhere = new Redeliver(new Client({ connection, namespace: `missing-${randomUUID()}` }), { taskQueue: env.h.taskQueue });
    const batcher = nowhere.batcher({ linger: 10 });
    const inputs = [message(newDevice()), message(newDevice())];
    const outcomes = await Promise.allSettled(inputs.map((i) => batcher.submit(i)));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).toMatch(/[Nn]amespace/);
    await batcher.close();
    for (const input of inputs) expect(requestsOf(input)).toHaveLength(0);
  } finally {
    await connection.close();
  }
});

test('batcher options are checked, each wrong one named', () => {
  expect(fieldsOf(catching(() => env.h.redeliver.batcher({ linger: 'soon' })))).toEqual(['linger']);
  // past a timer's limit (2^31 - 1 ms, about 24.8 days) Node fires at once: a linger of 30 days would not linger at all
  expect(fieldsOf(catching(() => env.h.redeliver.batcher({ linger: '30 days' })))).toEqual(['linger']);
  expect(fieldsOf(catching(() => env.h.redeliver.batcher({ maxMessages: 1_001 })))).toEqual(['maxMessages']);
  expect(fieldsOf(catching(() => env.h.redeliver.batcher({ maxInFlight: 0 })))).toEqual(['maxInFlight']);
});

function catching(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a refusal');
}
