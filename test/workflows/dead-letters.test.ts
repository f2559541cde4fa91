import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../src/delivery/types';
import { runCli } from '../support/cli';
import { useHarnessAndEndpoint } from '../support/setup';
import { testAddress } from '../support/temporal';
import { waitFor } from '../support/wait';

const env = useHarnessAndEndpoint();

const tenantOf = () => `t-${randomUUID().slice(0, 8)}`;
const collect = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

test('dead letters are listed by filter and shown with their message and last error', async () => {
  const tenant = tenantOf();
  const base = { tenant, payload: { v: 1 } };
  const inputs: DeliveryInput[] = [
    { ...base, kind: 'event', device: 'd1', messageId: 'rejected', target: `${env.endpoint.url}/dl?fail=9&status=403` },
    { ...base, kind: 'event', device: 'd2', messageId: 'exhausted', target: `${env.endpoint.url}/dl?fail=9&status=500`, policy: { maxAttempts: 2 } },
    { ...base, kind: 'telemetry', qos: 0, device: 'd3', messageId: 'dropped', target: `${env.endpoint.url}/dl?fail=9&status=503` },
    { ...base, kind: 'event', device: 'd4', messageId: 'delivered', target: `${env.endpoint.url}/dl` },
  ];
  const handles = await env.h.redeliver.submitMany(inputs);
  await Promise.all(handles.map((x) => x.result()));

  const all = await waitFor(() => collect(env.h.redeliver.deadLetters({ tenant })), (rows) => rows.length === 3, 10_000, 'three dead letters');
  expect(all.map((r) => r.state).sort()).toEqual(['dropped', 'exhausted', 'rejected']);
  expect((await collect(env.h.redeliver.deadLetters({ tenant, errorClass: 'client' }))).map((r) => r.device)).toEqual(['d1']);
  expect((await collect(env.h.redeliver.deadLetters({ tenant, kind: 'telemetry' }))).map((r) => r.device)).toEqual(['d3']);
  expect(await collect(env.h.redeliver.deadLetters({ tenant, endpoint: new URL(env.endpoint.url).host, state: 'exhausted' }))).toHaveLength(1);
  expect(await collect(env.h.redeliver.deadLetters({ tenant, since: new Date(Date.now() + 60_000) }))).toHaveLength(0);

  const shown = await runCli(['dead-letters', 'show', handles[1]!.deliveryId, '--json', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  expect(shown.code).toBe(0);
  const letter = JSON.parse(shown.stdout);
  expect(letter).toMatchObject({ outcome: 'exhausted', attempts: 2, lastError: { class: 'server', code: 'http-500' }, message: { body: '{"v":1}', tenant, device: 'd2' } });
  expect(Date.parse(letter.lastAttemptAt)).toBeGreaterThanOrEqual(Date.parse(letter.firstAttemptAt));
});

test('redrive starts a new run of the same delivery id, which delivers the kept message', async () => {
  const input: DeliveryInput = { kind: 'event', tenant: tenantOf(), device: 'd', messageId: randomUUID(), payload: 'hello', target: `${env.endpoint.url}/redrive?fail=1&status=400` };
  const first = await env.h.redeliver.submit(input);
  expect((await first.result()).outcome).toBe('rejected');
  const firstRun = (await first.workflow.describe()).runId;

  const again = await env.h.redeliver.redrive(first.deliveryId);
  expect(again.created).toBe(true);
  expect(await again.result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  const runs = await collect(env.h.client.workflow.list({ query: `WorkflowId = '${first.deliveryId}'` }));
  expect(runs).toHaveLength(2);
  expect((await again.workflow.describe()).memo).toMatchObject({ redriveOf: firstRun });
  expect(env.endpoint.received.filter((r) => r.messageId === input.messageId).map((r) => [r.status, r.body])).toEqual([[400, 'hello'], [202, 'hello']]);

  await expect(env.h.redeliver.redrive(first.deliveryId)).rejects.toThrow(/only dead letters can be redriven; this delivery is delivered/);
});

test('bulk redrive of 1,000 dead letters from the CLI, with a progress bar', async () => {
  const tenant = tenantOf();
  const inputs: DeliveryInput[] = Array.from({ length: 1000 }, (_, i) => ({
    kind: 'event', tenant, device: `d${i % 10}`, messageId: `m${i}`, payload: { i }, target: `${env.endpoint.url}/bulk?fail=1&status=422`,
  }));
  const handles = await env.h.redeliver.submitMany(inputs, undefined, 32);
  await Promise.all(handles.map((x) => x.result()));
  await waitFor(() => env.h.redeliver.count({ tenant, state: 'rejected' }), (n) => n === 1000, 30_000, '1,000 dead letters');

  const run = await runCli(['redrive', '--all', '--tenant', tenant, '--concurrency', '32', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  expect(run.stderr).toContain('redrive: 1000/1000');
  expect(run.stdout.trim()).toBe('redriven 1000, failed 0');
  expect(run.code).toBe(0);
  await waitFor(() => env.h.redeliver.count({ tenant, state: 'delivered' }), (n) => n === 1000, 60_000, '1,000 redriven deliveries delivered');
  const delivered = new Set(env.endpoint.received.filter((r) => r.path === '/bulk' && r.status === 202).map((r) => r.messageId));
  expect(delivered.size).toBe(1000);
}, 180_000);
