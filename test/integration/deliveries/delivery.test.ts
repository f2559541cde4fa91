import { randomUUID } from 'node:crypto';
import { InvalidInputError } from '../../../src/errors';
import { useHarnessAndEndpoint } from '../../support/setup';

const env = useHarnessAndEndpoint();

const base = () => ({ tenant: 'acme', device: `sensor-${randomUUID().slice(0, 8)}`, messageId: randomUUID(), payload: { t: 21.5 } });

test('503, 503, then 202: delivered after 3 attempts, with waits inside the policy bounds', async () => {
  const input = { ...base(), kind: 'event' as const, target: `${env.endpoint.url}/flaky?fail=2&status=503` };
  const handle = await env.h.redeliver.submit(input);
  const result = await handle.result();

  expect(result.outcome).toBe('delivered');
  expect(result.attempts).toBe(3);
  expect(result.lastError).toMatchObject({ class: 'server', code: 'http-503', attempt: 2 });
  const seen = env.endpoint.received.filter((r) => r.messageId === input.messageId);
  expect(seen.map((r) => r.status)).toEqual([503, 503, 202]);
  expect(seen.map((r) => r.attempt)).toEqual([1, 2, 3]);
  // full jitter with the defaults puts the first wait at 200 ms (the floor) and the second in [200, 400] ms;
  // Temporal runs them as activity retries, so the receiver sees no attempt before its time. After it, the server's
  // dispatch of the retry adds its own delay: 1,023 ms once in a full run on 2 cores (a gap of 1,423 ms for a wait
  // of at most 400), so the upper bound only tells a wrong policy (its next waits would be seconds) from a slow machine
  const gaps = [seen[1]!.at - seen[0]!.at, seen[2]!.at - seen[1]!.at];
  for (const gap of gaps) {
    expect(gap).toBeGreaterThanOrEqual(190);
    expect(gap).toBeLessThan(400 + 3_000);
  }
  // the retries cost no timer and no activity of their own: one for the first attempt, one for the retries
  const history = await handle.workflow.fetchHistory();
  expect(history.events!.filter((e) => e.timerStartedEventAttributes)).toHaveLength(0);
  expect(history.events!.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(2);
  const status = await handle.status();
  expect(status).toMatchObject({ state: 'delivered', attempts: 3, nextAttemptAt: null, messageId: input.messageId });
});

test('400: rejected after 1 attempt, the dead letter keeps the message and the reason', async () => {
  const input = { ...base(), kind: 'event' as const, target: `${env.endpoint.url}/bad?fail=99&status=400` };
  const result = await (await env.h.redeliver.submit(input)).result();
  expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'http-400' } });
  expect(result.message?.body).toBe(JSON.stringify(input.payload));
  expect(env.endpoint.received.filter((r) => r.messageId === input.messageId)).toHaveLength(1);
});

test('telemetry QoS 0 with a 503: dropped after exactly 1 attempt', async () => {
  const input = { ...base(), kind: 'telemetry' as const, qos: 0 as const, target: `${env.endpoint.url}/qos0?fail=5&status=503` };
  const result = await (await env.h.redeliver.submit(input)).result();
  expect(result).toMatchObject({ outcome: 'dropped', attempts: 1, lastError: { code: 'http-503' } });
  expect(env.endpoint.received.filter((r) => r.messageId === input.messageId)).toHaveLength(1);
});

test('every attempt carries the message id, and telemetry its QoS-Level', async () => {
  const input = { ...base(), kind: 'telemetry' as const, target: `${env.endpoint.url}/headers` };
  const handle = await env.h.redeliver.submit(input);
  expect((await handle.result()).outcome).toBe('delivered');
  const [seen] = env.endpoint.received.filter((r) => r.messageId === input.messageId);
  expect(seen?.body).toBe('{"t":21.5}');
  expect(seen?.headers).toMatchObject({
    'message-id': input.messageId,
    'qos-level': '1',
    'delivery-attempt': '1',
    'content-type': 'application/json',
  });
});

test('duplicate submit returns the existing delivery: one workflow, one message', async () => {
  const input = { ...base(), kind: 'event' as const, target: `${env.endpoint.url}/dup?fail=1&status=503` };
  const [first, second] = await Promise.all([env.h.redeliver.submit(input), env.h.redeliver.submit(input)]);
  expect(first.deliveryId).toBe(second.deliveryId);
  expect([first.created, second.created].sort()).toEqual([false, true]);
  await first.result();
  const third = await env.h.redeliver.submit(input); // after it finished
  expect(third.created).toBe(false);
  expect((await third.result()).outcome).toBe('delivered');
  const executions = [];
  for await (const e of env.h.client.workflow.list({ query: `WorkflowId = '${first.deliveryId}'` })) executions.push(e);
  expect(executions).toHaveLength(1);
  expect(env.endpoint.received.filter((r) => r.messageId === input.messageId && r.status === 202)).toHaveLength(1);
});

test('the same message id for a different message is refused, naming the field', async () => {
  const input = { ...base(), kind: 'event' as const, target: `${env.endpoint.url}/ok` };
  await (await env.h.redeliver.submit(input)).result();
  await expect(env.h.redeliver.submit({ ...input, payload: { t: 99 } })).rejects.toThrow(/messageId: .* different message/);
});

test('bad input is refused before anything starts, every wrong field named', async () => {
  const bad = { tenant: 'acme', device: 'd 1', kind: 'parcel', qos: 2, target: 'ftp://x', payload: 1, policy: { min: '-5s' } };
  const err = await env.h.redeliver.submit(bad as never).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(InvalidInputError);
  const fields = (err as InvalidInputError).problems.map((p) => p.field).sort();
  expect(fields).toEqual(expect.arrayContaining(['device', 'kind', 'qos']));
  let count = 0;
  for await (const _ of env.h.client.workflow.list({ query: `TaskQueue = '${env.h.taskQueue}' AND Device = 'd 1'` })) count++;
  expect(count).toBe(0);
});
