/**
 * Batches under faults and repeats, on the suite's dev server: a worker killed in the middle of a batch, a
 * batch submitted again, a message id in two batches or twice in one.
 */
import { randomUUID } from 'node:crypto';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { MessageResult } from '../../../src/contract';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { InvalidInputError } from '../../../src/errors';
import { runWorker } from '../../../src/worker';
import { startReceiver, type Receiver } from '../../support/receiver';
import { createTestWorker, startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';
import { spawnWorker } from '../../support/worker-process';

let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  [h, receiver] = await Promise.all([startHarness(), startReceiver()]);
});
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
});

const message = (device: string, path: string, extra: Partial<DeliveryInput> = {}): DeliveryInput => ({
  kind: 'event',
  tenant: 'acme',
  device,
  messageId: randomUUID(),
  payload: { path, n: randomUUID() },
  target: `${receiver.url}${path}`,
  policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
  ...extra,
});
const newDevice = () => `d-${randomUUID().slice(0, 8)}`;
const executions = async (workflowId: string) => {
  let n = 0;
  for await (const _ of h.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) n++;
  return n;
};
const problemsOf = (err: unknown) => (err instanceof InvalidInputError ? err.problems.map((p) => p.field) : err);

/** What a batch's activity last recorded with Temporal as done (its heartbeat), by message index. */
async function recordedProgress(workflowId: string): Promise<Record<number, MessageResult>> {
  const description = await h.client.workflow.getHandle(workflowId).describe();
  const pending = description.raw.pendingActivities?.find((a) => a.activityType?.name === 'firstAttempts');
  if (!pending?.heartbeatDetails?.payloads?.length) return {};
  return decodeFromPayloadsAtIndex(h.client.options.loadedDataConverter, 0, pending.heartbeatDetails.payloads);
}

test('a worker killed with SIGKILL mid-batch: another worker finishes the batch; every message arrives, each has one outcome', async () => {
  const taskQueue = `batch-kill-${randomUUID()}`;
  const redeliver = new Redeliver(h.client, { taskQueue });
  const device = newDevice();
  const inputs = Array.from({ length: 100 }, () => message(device, '/kill'));
  // a slow endpoint: the first 40 messages are answered in 100 ms, the next ones held for a minute (the
  // worker dies holding them); once the worker is killed, every request is answered in 300 ms
  const order = new Map<string, number>();
  let killed = false;
  receiver.route('/kill', ({ messageId }) => {
    if (!order.has(messageId!)) order.set(messageId!, order.size);
    if (killed) return { status: 202, delayMs: 300 };
    return order.get(messageId!)! < 40 ? { status: 202, delayMs: 100 } : { status: 202, delayMs: 60_000 };
  });
  const doomed = spawnWorker({ address: testAddress(), taskQueue });
  await doomed.ready;
  const submission = await redeliver.submitBatch(inputs);
  const batch = submission.batches[0]!;

  // killed once the batch's progress is recorded with Temporal and all 32 of its requests to the endpoint hang
  const recorded = await waitFor(
    () => recordedProgress(batch.workflowId),
    (done) => Object.keys(done).length > 0 && order.size === 40 + 32,
    30_000,
    'recorded progress, and the worker holding 32 requests',
  );
  killed = true;
  await doomed.kill('SIGKILL');
  const recordedIds = new Set(Object.values(recorded).map((r) => r.messageId));
  const heldIds = inputs.map((i) => i.messageId!).filter((id) => order.get(id)! >= 40);

  // Temporal notices the lost worker at the activity's heartbeat timeout (20 s) and retries it on the heir
  const heir = await createTestWorker(testAddress(), taskQueue);
  const result = await runWorker(heir, batch.result());

  // one outcome per message, each message once, in the batch's order: all delivered at once
  expect(result).toMatchObject({ messages: 100, delivered: 100, handedOver: 0 });
  expect(result.results.map((r) => r.messageId)).toEqual(inputs.map((i) => i.messageId));
  // none lost: each one accepted (a 2xx answered in full) at least once
  const accepted = receiver.accepted();
  for (const input of inputs) expect(accepted.has(input.messageId!)).toBe(true);
  // what the heartbeat had recorded as done is not sent again
  for (const id of recordedIds) expect(receiver.of(id)).toHaveLength(1);
  // what the dead worker was waiting on is sent again, the same message with the same Message-Id
  expect(heldIds.length).toBeGreaterThan(0);
  for (const id of heldIds) {
    const seen = receiver.of(id);
    expect(seen).toHaveLength(2);
    expect(seen[0]!.outcome).not.toBe(202);
    expect(seen[1]!.outcome).toBe(202);
    expect(seen[1]!.body).toBe(seen[0]!.body);
    expect(seen.map((r) => r.attempt)).toEqual([1, 1]);
  }
}, 120_000);

test('a batch resubmitted with its batch id sends nothing twice, also while the first submit is still sending', async () => {
  const device = newDevice();
  const inputs = Array.from({ length: 10 }, () => message(device, '/again'));
  const batchId = `upload-${randomUUID()}`;
  const both = await Promise.all([h.redeliver.submitBatch(inputs, { batchId }), h.redeliver.submitBatch(inputs, { batchId })]);
  expect(both.map((s) => s.batches.map((b) => b.batchId))).toEqual([[batchId], [batchId]]);
  expect(both.map((s) => s.batches[0]!.created).sort()).toEqual([false, true]);
  await Promise.all(both.map((s) => s.outcomes()));

  const later = await h.redeliver.submitBatch(inputs, { batchId });
  expect(later.batches[0]!.created).toBe(false);
  const outcomes = await later.outcomes();
  expect(outcomes.map((o) => o.outcome)).toEqual(inputs.map(() => 'delivered'));
  for (const input of inputs) expect(receiver.of(input.messageId!)).toHaveLength(1);
  expect(await executions(later.batches[0]!.workflowId)).toBe(1);
});

test('a batch id used again for other messages is refused, naming batchId: none of them is sent', async () => {
  const device = newDevice();
  const batchId = `upload-${randomUUID()}`;
  const first = await h.redeliver.submitBatch([message(device, '/reused'), message(device, '/reused')], { batchId });
  await first.outcomes();
  const others = [message(device, '/reused'), message(device, '/reused')];
  const err = await h.redeliver.submitBatch(others, { batchId }).catch((e: unknown) => e);
  expect(problemsOf(err)).toEqual(['batchId']);
  expect((err as Error).message).toMatch(`${batchId} was already used for a batch of other messages`);
  await first.outcomes();
  for (const input of others) expect(receiver.of(input.messageId!)).toHaveLength(0);
});

test('the same message id in two different batches: each batch sends it once; a delivery that exists for it stands', async () => {
  const device = newDevice();
  // delivered at once both times: the receiver gets it twice, with one Message-Id, and no delivery is made
  const twice = message(device, '/twice');
  const first = await h.redeliver.submitBatch([twice, message(device, '/twice')]);
  const second = await h.redeliver.submitBatch([twice, message(device, '/twice')]);
  expect(second.batches[0]!.batchId).not.toBe(first.batches[0]!.batchId);
  for (const s of [first, second]) expect((await s.batches[0]!.result()).results[0]).toMatchObject({ disposition: 'delivered' });
  const seen = receiver.of(twice.messageId!);
  expect(seen.map((r) => [r.attempt, r.outcome])).toEqual([
    [1, 202],
    [1, 202],
  ]);
  expect(seen[1]!.body).toBe(seen[0]!.body);
  expect(await executions(first.deliveryIds[0]!)).toBe(0);

  // failed in both: the first batch's hand-over makes the delivery; the second finds it and leaves it be
  receiver.route('/first-fails', ({ attempt }) => (attempt === 1 ? { status: 503 } : { status: 202 }));
  const failing = message(device, '/first-fails');
  const a = await h.redeliver.submitBatch([failing, message(device, '/twice')]);
  expect(await a.outcomes()).toContainEqual(expect.objectContaining({ messageId: failing.messageId, outcome: 'delivered', attempts: 2 }));
  const b = await h.redeliver.submitBatch([failing, message(device, '/twice')]);
  expect((await b.batches[0]!.result()).results[0]).toMatchObject({ disposition: 'handed-over', code: 'http-503', existing: true });
  expect(await b.outcomes()).toContainEqual(expect.objectContaining({ messageId: failing.messageId, outcome: 'delivered', attempts: 2 }));
  expect(receiver.of(failing.messageId!).map((r) => r.attempt)).toEqual([1, 2, 1]);
  expect(await executions(a.deliveryIds[0]!)).toBe(1);
});

test('a message id repeated within a batch: sent once when identical; a different message refused naming [i].messageId, nothing sent', async () => {
  const device = newDevice();
  const same = message(device, '/repeat');
  const submission = await h.redeliver.submitBatch([same, message(device, '/repeat'), { ...same }]);
  expect(submission.deliveryIds).toHaveLength(2);
  expect((await submission.batches[0]!.result()).messages).toBe(2);
  expect(receiver.of(same.messageId!)).toHaveLength(1);

  const clash = message(device, '/repeat');
  const innocent = message(device, '/repeat');
  const err = await h.redeliver.submitBatch([clash, innocent, { ...clash, payload: 'another message' }]).catch((e: unknown) => e);
  expect(problemsOf(err)).toEqual(['[2].messageId']);
  await submission.outcomes();
  expect(receiver.of(clash.messageId!)).toHaveLength(0);
  expect(receiver.of(innocent.messageId!)).toHaveLength(0);
});
