/**
 * Issue 29's first part, as a new user tries it: a message that went in a batch and was delivered at once has
 * no delivery workflow of its own, yet `status <deliveryId>`, `GET /v1/deliveries/{deliveryId}` and the client's
 * `getHandle(id).status()` find it by its batch's message index (docs/batches.md, "Finding a message by its id"),
 * and name the batch it came in. On the suite's dev server, with a receiver that logs every request.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { DeliveryInput, DeliveryStatus } from '../../../src/delivery/types';
import { idPath, startApi, type TestApi } from '../../support/api';
import { runCli } from '../../support/cli';
import { statusOnceFound } from '../../support/status';
import { useHarnessAndReceiver } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

// a single submit as production makes it: its first attempt a standalone activity (docs/batches.md, "A single submit")
const env = useHarnessAndReceiver({ singleSubmit: 'standalone' });
// a tenant of its own: the index is looked up per tenant
const TENANT = `find-${randomUUID().slice(0, 8)}`;
const KEY = `key-${randomUUID()}`;
let api: TestApi;

beforeAll(async () => {
  api = await startApi(env.h.redeliver, [{ key: KEY, tenants: [TENANT], roles: ['produce', 'operate', 'read'] }]);
});
afterAll(() => api?.close());

const event = (device: string, route: string): DeliveryInput => ({
  kind: 'event',
  tenant: TENANT,
  device,
  messageId: randomUUID(),
  payload: { route },
  target: `${env.receiver.url}${route}`,
});
const idOf = (m: DeliveryInput) => `delivery/${m.tenant}/${m.device}/${m.messageId}`;

async function cliStatus(deliveryId: string): Promise<DeliveryStatus> {
  const run = await runCli(['status', deliveryId, '--json', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  if (run.code !== 0) throw new Error(`redeliver status exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as DeliveryStatus;
}

/** The same status three ways: the client, the HTTP API, the CLI. Visibility indexes a batch within a moment of its start. */
async function statusEveryWay(deliveryId: string): Promise<DeliveryStatus[]> {
  const viaClient = await waitFor(
    () =>
      env.h.redeliver
        .getHandle(deliveryId)
        .status()
        .catch((err: unknown) => (err instanceof WorkflowNotFoundError ? null : Promise.reject(err))),
    (s) => s !== null && s.state === 'delivered',
    10_000,
    `the status of ${deliveryId}`,
  );
  const viaApi = await api.call('GET', `/v1/deliveries/${idPath(deliveryId)}`, KEY);
  expect(viaApi.status).toBe(200);
  return [viaClient!, viaApi.json as DeliveryStatus, await cliStatus(deliveryId)];
}

test('submit --file of three events delivered at once: each found by its id through client, API and CLI, naming its batch', async () => {
  const device = `file-${randomUUID().slice(0, 8)}`;
  const inputs = [event(device, '/ok'), event(device, '/ok'), event(device, '/ok')];
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-find-')), 'messages.ndjson');
  writeFileSync(file, inputs.map((i) => JSON.stringify(i)).join('\n'));
  const run = await runCli(['submit', '--file', file, '--wait', '--json', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  expect(run.code).toBe(0);
  const report = JSON.parse(run.stdout) as { batchWorkflowIds: string[]; outcomes: Record<string, number> };
  expect(report.outcomes).toMatchObject({ delivered: 3, rejected: 0 });
  const [batchWorkflowId] = report.batchWorkflowIds;

  for (const m of inputs) {
    // no delivery workflow: the batch delivered it at once
    await expect(env.h.client.workflow.getHandle(idOf(m)).describe()).rejects.toThrow(WorkflowNotFoundError);
    const request = env.receiver.requests.find((r) => r.messageId === m.messageId)!;
    for (const status of await statusEveryWay(idOf(m))) {
      expect(status).toMatchObject({
        deliveryId: idOf(m),
        messageId: m.messageId,
        tenant: TENANT,
        device,
        kind: 'event',
        endpoint: new URL(env.receiver.url).host,
        state: 'delivered',
        attempts: 1,
        lastError: null,
        batch: { workflowId: batchWorkflowId },
      });
      expect(status.summary).toContain('http-202');
      // the batch keeps when the attempt ended: after the receiver answered
      expect(Date.parse(status.lastAttemptAt!)).toBeGreaterThanOrEqual(request.startedAt - 1_000);
    }
  }
  const shown = await runCli(['status', idOf(inputs[0]!), '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  expect(shown.stdout).toContain(`batch       ${batchWorkflowId}`);
  // its outcome, and the controls refused as for any delivery that has ended
  const handle = env.h.redeliver.getHandle(idOf(inputs[1]!));
  expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 1, lastError: null });
  await expect(handle.retryNow()).rejects.toMatchObject({ kind: 'Ended' });
  const cancel = await api.call('POST', `/v1/deliveries/${idPath(idOf(inputs[2]!))}/cancel`, KEY);
  expect(cancel.status).toBe(409);
});

test('an array POST: each message found by its id, its batch named as the answer gave it; an unknown id stays 404', async () => {
  const device = `api-${randomUUID().slice(0, 8)}`;
  const inputs = [event(device, '/ok'), event(device, '/ok')];
  const posted = await api.call('POST', '/v1/deliveries', KEY, inputs);
  expect(posted.status).toBe(202);
  const answers = posted.json as { deliveryId: string; batchId: string }[];
  for (const { deliveryId, batchId } of answers) {
    for (const status of await statusEveryWay(deliveryId))
      expect(status.batch).toEqual({ batchId, workflowId: `batch/${TENANT}/${batchId}` });
  }
  const missing = `delivery/${TENANT}/${device}/never-sent`;
  expect((await api.call('GET', `/v1/deliveries/${idPath(missing)}`, KEY)).status).toBe(404);
  await expect(env.h.redeliver.getHandle(missing).status()).rejects.toThrow(WorkflowNotFoundError);
});

test('a message whose batch is still making its first attempts is found attempting, then delivered', async () => {
  env.receiver.route('/slow', () => ({ status: 202, delayMs: 4_000 }));
  const m = event(`slow-${randomUUID().slice(0, 8)}`, '/slow');
  const submission = await env.h.redeliver.submitBatch([m]);
  const attempting = await statusOnceFound(env.h.redeliver, idOf(m), 10_000, 'the message in its running batch');
  expect(attempting).toMatchObject({ state: 'attempting', attempts: 0, batch: { workflowId: submission.batches[0]!.workflowId } });
  // its outcome waits for the batch
  expect(await env.h.redeliver.getHandle(idOf(m)).result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect(await env.h.redeliver.getHandle(idOf(m)).status()).toMatchObject({ state: 'delivered', attempts: 1 });
});

test('a message handed over to a delivery of its own names the batch it came in', async () => {
  env.receiver.route('/once', ({ nth }) => (nth === 1 ? { status: 400 } : { status: 202 }));
  const m = event(`own-${randomUUID().slice(0, 8)}`, '/once');
  const submission = await env.h.redeliver.submitBatch([m]);
  const [outcome] = await submission.outcomes();
  expect(outcome).toMatchObject({ outcome: 'rejected' });
  expect(await env.h.redeliver.getHandle(idOf(m)).status()).toMatchObject({
    state: 'rejected',
    batch: { workflowId: submission.batches[0]!.workflowId },
  });
});

test('list: messages delivered at once in their batches are listed with the deliveries of their own, newest first, by state and device', async () => {
  const device = `list-${randomUUID().slice(0, 8)}`;
  env.receiver.route('/refuse-once', ({ nth }) => (nth === 1 ? { status: 400 } : { status: 202 }));
  // a batch: two delivered at once, one rejected (its own delivery); then a single submit delivered (its own too)
  const batched = [event(device, '/ok'), event(device, '/ok'), event(device, '/refuse-once')];
  await (await env.h.redeliver.submitBatch(batched)).outcomes();
  const single = event(device, '/ok');
  await (await env.h.redeliver.submit(single)).result();
  const other = event(`other-${randomUUID().slice(0, 8)}`, '/ok');
  await (await env.h.redeliver.submitBatch([other])).outcomes();

  const listed = async (...flags: string[]) => {
    const run = await runCli(['list', '--tenant', TENANT, ...flags, '--json', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as { deliveryId: string; state: string; runId: string; batch?: { workflowId: string } }[];
  };
  // visibility lists what has closed within a moment: each listing is read until it has what it must
  const until = (flags: string[], ids: string[], what: string) =>
    waitFor(
      () => listed(...flags),
      (rows) => ids.every((id) => rows.some((r) => r.deliveryId === id)),
      10_000,
      what,
    );
  const delivered = await until(
    ['--device', device, '--state', 'delivered'],
    [idOf(batched[0]!), idOf(batched[1]!), idOf(single)],
    'the delivered messages of the device in the listing',
  );
  // each message once: the two of the batch (no workflow, the batch named), the single submit's first attempt (no
  // workflow either: a standalone activity, no batch)
  expect(delivered.map((r) => r.deliveryId).sort()).toEqual([idOf(batched[0]!), idOf(batched[1]!), idOf(single)].sort());
  for (const m of batched.slice(0, 2)) expect(delivered.find((r) => r.deliveryId === idOf(m))).toMatchObject({ runId: '', batch: {} });
  const singleLine = delivered.find((r) => r.deliveryId === idOf(single))!;
  expect(singleLine).toMatchObject({ runId: '', state: 'delivered' });
  expect(singleLine.batch).toBeUndefined();
  // newest first: the single submit ended after the batch
  expect(delivered[0]!.deliveryId).toBe(idOf(single));
  // a state filter the batched messages are not in leaves them out; the rejected one is its own delivery's line
  const rejected = await until(['--device', device, '--state', 'rejected'], [idOf(batched[2]!)], 'the rejected message listed');
  expect(rejected.map((r) => r.deliveryId)).toEqual([idOf(batched[2]!)]);
  const all = await until(['--device', device], [...batched, single].map(idOf), 'every message of the device listed');
  expect(all.map((r) => r.deliveryId).sort()).toEqual([...batched, single].map(idOf).sort());
  // the other device's message is listed for the tenant, not for this device
  await until(['--state', 'delivered'], [idOf(other)], 'the other device’s message listed for the tenant');
});
