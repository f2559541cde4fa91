import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import { eventTo } from '../../support/messages';
import { useHarnessAndEndpoint } from '../../support/setup';

const env = useHarnessAndEndpoint();

const message = (device: string, path: string, extra: Partial<DeliveryInput> = {}) => eventTo(env.endpoint.url, device, path, extra);
const requestsOf = (messageId: string | undefined) => env.endpoint.received.filter((r) => r.messageId === messageId);

test('a batch delivers at once what it can, and hands the rest to deliveries of their own', async () => {
  const device = `b-${randomUUID().slice(0, 8)}`;
  const ok = Array.from({ length: 20 }, () => message(device, '/ok'));
  const retried = message(device, '/retried?fail=1&status=503');
  const refused = message(device, '/refused?fail=99&status=400');
  const dropped = message(device, '/dropped?fail=99&status=503', { kind: 'telemetry', qos: 0 });
  const submission = await env.h.redeliver.submitBatch([...ok, retried, refused, dropped]);
  expect(submission.batches).toHaveLength(1);
  expect(submission.batches[0]!.created).toBe(true);

  const batch = await submission.batches[0]!.result();
  expect(batch).toMatchObject({ messages: 23, delivered: 20, handedOver: 3 });
  expect(batch.results.slice(0, 20).every((r) => r.disposition === 'delivered' && r.code === 'http-202')).toBe(true);

  const outcomes = await submission.outcomes();
  const byId = new Map(outcomes.map((o) => [o.messageId, o]));
  expect(byId.get(retried.messageId!)).toMatchObject({ outcome: 'delivered', attempts: 2 });
  expect(byId.get(refused.messageId!)).toMatchObject({ outcome: 'rejected', attempts: 1, code: 'http-400' });
  expect(byId.get(dropped.messageId!)).toMatchObject({ outcome: 'dropped', attempts: 1 });
  for (const m of ok) expect(requestsOf(m.messageId)).toHaveLength(1);
  expect(requestsOf(retried.messageId)).toHaveLength(2);
  expect(requestsOf(refused.messageId)).toHaveLength(1);

  // the handed-over messages are deliveries like any other: status, attempt log, dead letters
  const status = await env.h.redeliver.getHandle(submission.deliveryIds[20]!).status();
  expect(status).toMatchObject({ state: 'delivered', attempts: 2 });
  const letters: string[] = [];
  for await (const l of env.h.redeliver.deadLetters({ device })) letters.push(l.deliveryId);
  expect(letters.sort()).toEqual([submission.deliveryIds[21], submission.deliveryIds[22]].sort());
});

test('a batch resubmitted sends nothing again', async () => {
  const device = `r-${randomUUID().slice(0, 8)}`;
  const inputs = Array.from({ length: 5 }, () => message(device, '/again'));
  const first = await env.h.redeliver.submitBatch(inputs);
  await first.outcomes();
  const again = await env.h.redeliver.submitBatch(inputs);
  expect(again.batches.map((b) => b.created)).toEqual([false]);
  expect(again.batches[0]!.batchId).toBe(first.batches[0]!.batchId);
  await again.outcomes();
  for (const m of inputs) expect(requestsOf(m.messageId)).toHaveLength(1);
});
