/**
 * Issue 29's second part: a single submit makes its first attempt as a standalone activity (docs/batches.md, "A
 * single submit"). Delivered at once, no workflow is started and the message is found by its id through the
 * client, the HTTP API and the CLI; not delivered, it is handed to a delivery of its own carrying that attempt. A
 * resubmit during or after either step is the same delivery and sends nothing again; a cancel before the attempt
 * went out stops it. On the suite's dev server (Temporal 1.32), with a receiver that logs every request.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Redeliver, type DeliverySummary } from '../../../src/client';
import type { DeliveryWorkflowInput } from '../../../src/contract';
import type { DeliveryInput, DeliveryStatus } from '../../../src/delivery/types';
import type { DeliveryMemo } from '../../../src/starter/delivery-start';
import { idPath, startApi, type TestApi } from '../../support/api';
import { runCli } from '../../support/cli';
import { useHarnessAndReceiver } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

// outage holds off: the failing first attempt below must become a delivery of its own, not wait with others
const env = useHarnessAndReceiver({ outageHold: false, singleSubmit: 'standalone' });
const TENANT = `single-${randomUUID().slice(0, 8)}`;
const KEY = `key-${randomUUID()}`;
let api: TestApi;

beforeAll(async () => {
  api = await startApi(env.h.redeliver, [{ key: KEY, tenants: [TENANT], roles: ['produce', 'operate', 'read'] }]);
});
afterAll(() => api?.close());

const event = (route: string): DeliveryInput => ({
  kind: 'event',
  tenant: TENANT,
  device: `dev-${randomUUID().slice(0, 8)}`,
  messageId: randomUUID(),
  payload: { route },
  target: `${env.receiver.url}${route}`,
});
const idOf = (m: DeliveryInput) => `delivery/${m.tenant}/${m.device}/${m.messageId}`;

async function cli(args: string[]): Promise<string> {
  const run = await runCli([...args, '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  if (run.code !== 0) throw new Error(`redeliver ${args[0]} exited ${run.code}: ${run.stderr}`);
  return run.stdout;
}

/** The same status three ways: the client, the HTTP API, the CLI. */
async function statusEveryWay(deliveryId: string): Promise<DeliveryStatus[]> {
  const viaApi = await api.call('GET', `/v1/deliveries/${idPath(deliveryId)}`, KEY);
  expect(viaApi.status).toBe(200);
  const viaCli = JSON.parse(await cli(['status', deliveryId, '--json'])) as DeliveryStatus;
  return [await env.h.redeliver.getHandle(deliveryId).status(), viaApi.json as DeliveryStatus, viaCli];
}

test('delivered at once: no workflow, found by its id through client, API and CLI; a resubmit sends nothing again', async () => {
  const m = event('/ok');
  const handle = await env.h.redeliver.submit(m);
  expect(handle.created).toBe(true);
  expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 1, lastError: null });

  await expect(env.h.client.workflow.getHandle(idOf(m)).describe()).rejects.toThrow(WorkflowNotFoundError);
  const activity = await env.h.client.activity.getHandle(idOf(m)).describe();
  expect(activity).toMatchObject({ activityType: 'firstAttempt', status: 'COMPLETED', taskQueue: env.h.taskQueue });
  for (const status of await statusEveryWay(idOf(m))) {
    expect(status).toMatchObject({ deliveryId: idOf(m), tenant: TENANT, kind: 'event', state: 'delivered', attempts: 1 });
    expect(status.summary).toContain('http-202');
    expect(status.summary).toContain('standalone activity');
    expect(status.batch).toBeUndefined();
  }
  // listed with the deliveries, by its device (visibility lists what closed a moment ago: read until it has it)
  const listed = await waitFor(
    async () => {
      const lines: DeliverySummary[] = [];
      for await (const line of env.h.redeliver.list({ device: m.device, state: 'delivered' })) lines.push(line);
      return lines;
    },
    (lines) => lines.length > 0,
    10_000,
    'the first attempt listed',
  );
  expect(listed).toEqual([expect.objectContaining({ deliveryId: idOf(m), state: 'delivered', runId: '', attempts: 1, kind: 'event' })]);
  // the same message again, through the client and the API: the same delivery, nothing sent again
  expect((await env.h.redeliver.submit(m)).created).toBe(false);
  const again = await api.call('POST', '/v1/deliveries', KEY, m);
  expect(again.status).toBeLessThan(300);
  expect(env.receiver.of(m.messageId!)).toHaveLength(1);
  // another message under its id is refused, naming the field
  await expect(env.h.redeliver.submit({ ...m, payload: { other: true } })).rejects.toMatchObject({
    problems: [expect.objectContaining({ field: 'messageId' })],
  });
  // the endpoint it went to is one the tenant's key may read, though no delivery of its own went there
  const endpoint = new URL(env.receiver.url).host;
  await waitFor(
    () => api.call('GET', `/v1/endpoints/${encodeURIComponent(endpoint)}`, KEY),
    (r) => r.status === 200,
    10_000,
    'the endpoint readable by the tenant',
  );
  // a control of a delivery that has ended is refused as such
  await expect(env.h.redeliver.getHandle(idOf(m)).pause()).rejects.toMatchObject({ kind: 'Ended' });
});

test('not delivered at once: handed to a delivery of its own carrying the first attempt, which goes on from it', async () => {
  const m = event('/fails-once');
  env.receiver.route('/fails-once', ({ nth }) => (nth === 1 ? { status: 503 } : { status: 202 }));
  const handle = await env.h.redeliver.submit(m);
  expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });
  expect(env.receiver.of(m.messageId!).map((r) => r.attempt)).toEqual([1, 2]);

  const workflow = env.h.client.workflow.getHandle(idOf(m));
  const description = await workflow.describe();
  expect((description.memo as unknown as DeliveryMemo).batch).toBe(`first-attempt/${idOf(m)}`);
  const history = await workflow.fetchHistory();
  const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
  const { decodeFromPayloadsAtIndex } = await import('@temporalio/common/lib/internal-non-workflow');
  const input = await decodeFromPayloadsAtIndex<DeliveryWorkflowInput>(
    env.h.client.options.loadedDataConverter,
    0,
    started.input!.payloads!,
  );
  expect(input.firstAttempt?.failure).toMatchObject({ code: 'http-503' });
  // its first attempt says where it went; a resubmit now is the delivery, and sends nothing
  const first = await env.h.client.activity.getHandle(idOf(m)).result();
  expect(first.results[0]).toMatchObject({ deliveryId: idOf(m), disposition: 'handed-over', code: 'http-503' });
  expect((await env.h.redeliver.submit(m)).created).toBe(false);
  expect(env.receiver.of(m.messageId!)).toHaveLength(2);
  const status = await env.h.redeliver.getHandle(idOf(m)).status();
  expect(status).toMatchObject({ state: 'delivered', attempts: 2 });
  expect(status.batch).toBeUndefined();
});

test('a cancel before the first attempt went out stops it: cancelled, nothing sent, and a resubmit does not start it again', async () => {
  // a task queue no worker polls: the first attempt waits to be taken
  const idle = new Redeliver(env.h.client, { taskQueue: `idle-${randomUUID().slice(0, 8)}`, singleSubmit: 'standalone' });
  const m = event('/ok');
  const handle = await idle.submit(m);
  expect(handle.created).toBe(true);
  expect(await handle.status()).toMatchObject({ state: 'attempting', attempts: 0 });

  const cancelled = await handle.cancel({ waitMs: 10_000 });
  expect(cancelled).toMatchObject({ state: 'cancelled', attempts: 0 });
  expect(await handle.result()).toMatchObject({ outcome: 'cancelled' });
  expect((await env.h.client.activity.getHandle(idOf(m)).describe()).status).toBe('CANCELED');
  expect((await idle.submit(m)).created).toBe(false);
  await expect(handle.retryNow()).rejects.toMatchObject({ kind: 'Ended' });
  expect(env.receiver.of(m.messageId!)).toHaveLength(0);
});

test('REDELIVER_SINGLE_SUBMIT=standalone: `redeliver submit` makes its first attempt so, and `status` finds it', async () => {
  const m = event('/ok');
  const run = await runCli(
    [
      'submit',
      '--tenant',
      TENANT,
      '--device',
      m.device,
      '--id',
      m.messageId!,
      '--kind',
      'event',
      '--target',
      `${env.receiver.url}/ok`,
      '--data',
      '{"cli":1}',
      '--json',
      '--address',
      testAddress(),
      '--task-queue',
      env.h.taskQueue,
    ],
    { REDELIVER_SINGLE_SUBMIT: 'standalone' },
  );
  expect(run.stderr).toBe('');
  expect(JSON.parse(run.stdout)).toMatchObject({ deliveryId: idOf(m), created: true });
  expect(await env.h.client.activity.getHandle(idOf(m)).result()).toMatchObject({ delivered: 1 });
  expect(JSON.parse(await cli(['status', idOf(m), '--json']))).toMatchObject({ state: 'delivered', attempts: 1 });
  const bad = await runCli(
    ['submit', '--tenant', TENANT, '--device', 'd', '--kind', 'event', '--target', `${env.receiver.url}/ok`, '--address', testAddress()],
    {
      REDELIVER_SINGLE_SUBMIT: 'activity',
    },
  );
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toContain('REDELIVER_SINGLE_SUBMIT');
});

test('REDELIVER_SINGLE_SUBMIT=workflow (the default): the first attempt is made by the delivery’s workflow, as before', async () => {
  const viaWorkflow = new Redeliver(env.h.client, { taskQueue: env.h.taskQueue, singleSubmit: 'workflow' });
  const m = event('/ok');
  expect(await (await viaWorkflow.submit(m)).result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect((await env.h.client.workflow.getHandle(idOf(m)).describe()).status.name).toBe('COMPLETED');
  // and a standalone submit of the same message finds that delivery
  expect((await env.h.redeliver.submit(m)).created).toBe(false);
  expect(env.receiver.of(m.messageId!)).toHaveLength(1);
});
