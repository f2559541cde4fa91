/**
 * A message waiting in an outage hold stays first-class by its id (docs/endpoint-health.md, "Outages"), on the
 * suite's dev server: its status through the client, the HTTP API and the CLI; retry now, cancel and pause take
 * it out into a delivery of its own, resume is refused; a batch's outcomes wait for held messages to leave.
 */
import { randomUUID } from 'node:crypto';
import { BatchSubmission, type BatchHandle } from '../../../src/batching/batches';
import { heldEnd } from '../../../src/client/holds';
import { HoldIntake } from '../../../src/starter/hold-intake';
import {
  heldQuery,
  holdWorkflowId,
  type BatchResult,
  type HeldMessage,
  type HoldWorkflow,
  type MessageResult,
} from '../../../src/contract';
import type { DeliveryStatus } from '../../../src/delivery/types';
import { DeliveryControlError } from '../../../src/errors';
import { idPath, startApi, type TestApi } from '../../support/api';
import { runCli } from '../../support/cli';
import { statusOnceFound } from '../../support/status';
import { eventTo } from '../../support/messages';
import { useHarnessAndEndpoint } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const env = useHarnessAndEndpoint();
// a tenant of its own: status looks through every running hold of the message's tenant
const TENANT = `held-${randomUUID().slice(0, 8)}`;
const KEY = `key-${randomUUID()}`;
let api: TestApi;
let holdId: string;

beforeAll(async () => {
  api = await startApi(env.h.redeliver, [{ key: KEY, tenants: [TENANT], roles: ['produce', 'operate', 'read'] }]);
});
afterAll(() => api?.close());

const cli = async (...args: string[]) => {
  const run = await runCli([...args, '--json', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  if (run.code !== 0) throw new Error(`redeliver ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as DeliveryStatus;
};

/** A message as a batch hands it to a hold: its first attempt made and failed with a 503. */
function held(path: string): HeldMessage {
  const delivery = env.h.redeliver.validate(eventTo(env.endpoint.url, 'sensor-1', path, { tenant: TENANT }));
  const at = Date.now() - 1_000;
  return {
    delivery,
    batch: `batch/${TENANT}/b1`,
    heldAt: at + 10,
    attempts: 1,
    firstAttemptAt: at,
    lastAttemptAt: at,
    lastError: { class: 'server', code: 'http-503', reason: 'Service Unavailable', attempt: 1, at: new Date(at).toISOString() },
    attemptLog: [{ attempt: 1, startedAt: new Date(at).toISOString(), durationMs: 5, code: 'http-503', ok: false }],
  };
}

// always failing: they wait in the hold until taken out
let statusOnly: HeldMessage, retried: HeldMessage, cancelled: HeldMessage, paused: HeldMessage;
beforeAll(() => {
  statusOnly = held('/down?fail=99');
  retried = held('/down?fail=99');
  cancelled = held('/down?fail=99');
  paused = held('/down?fail=99');
});
const idOf = (m: HeldMessage) => m.delivery.deliveryId;
const hold = () => env.h.client.workflow.getHandle<HoldWorkflow>(holdId);

test('held messages are found by id: waiting in their hold, with their attempts', async () => {
  const endpoint = statusOnly.delivery.endpoint;
  // as a batch's activity hands them in: one update-with-start of the tenant's hold for the endpoint
  const answer = await new HoldIntake(env.h.client, env.h.taskQueue).hold(TENANT, endpoint, [statusOnly, retried, cancelled, paused]);
  holdId = answer.holdId;
  expect(holdId).toBe(holdWorkflowId(TENANT, endpoint, 0, env.h.taskQueue));
  expect(answer).toMatchObject({ held: 4, already: 0 });

  const expected = {
    deliveryId: idOf(statusOnly),
    tenant: TENANT,
    device: 'sensor-1',
    endpoint,
    state: 'waiting',
    nextAttemptAt: null,
    hold: { holdId },
    lastError: { class: 'server', code: 'http-503' },
  };
  // found once the hold is visible to the tenant's list
  const client = await statusOnceFound(env.h.redeliver, idOf(statusOnly), 15_000, 'the held message found by id');
  expect(client).toMatchObject(expected);
  expect(client!.attempts).toBeGreaterThanOrEqual(1);
  expect(client!.summary).toContain(`waiting in ${holdId} for ${endpoint}`);
  expect(client!.attemptLog[0]).toMatchObject({ attempt: 1, code: 'http-503', ok: false });

  const viaApi = await api.call('GET', `/v1/deliveries/${idPath(idOf(statusOnly))}`, KEY);
  expect(viaApi.status).toBe(200);
  expect(viaApi.json).toMatchObject(expected);
  expect(await cli('status', idOf(statusOnly))).toMatchObject(expected);

  // not held anywhere, and no delivery: not found, as before
  const missing = `delivery/${TENANT}/sensor-1/${randomUUID()}`;
  await expect(env.h.redeliver.getHandle(missing).status()).rejects.toThrow(/not found/i);
  expect((await api.call('GET', `/v1/deliveries/${idPath(missing)}`, KEY)).status).toBe(404);
});

test('resume is refused: a held message is not paused, and stays in its hold', async () => {
  const refused = await env.h.redeliver
    .getHandle(idOf(statusOnly))
    .resume()
    .catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(DeliveryControlError);
  expect(refused).toMatchObject({ kind: 'NotPaused' });
  expect((await hold().query(heldQuery, idOf(statusOnly)))?.left).toBeNull();
});

test('retry now takes it out into a delivery of its own, carrying its attempts, and attempts at once', async () => {
  const before = env.endpoint.received.filter((r) => r.messageId === retried.delivery.messageId).length;
  const status = await env.h.redeliver.getHandle(idOf(retried)).retryNow();
  expect(status.hold).toBeUndefined();
  expect((await env.h.client.workflow.getHandle(idOf(retried)).describe()).status.name).toBe('RUNNING');
  expect((await hold().query(heldQuery, idOf(retried)))?.left).toMatchObject({ left: 'handed-over' });
  // the attempts made in the hold are counted on: the retry is the next one
  await waitFor(
    async () => env.endpoint.received.filter((r) => r.messageId === retried.delivery.messageId),
    (seen) => seen.length > before,
    15_000,
    'the retry now',
  );
  const after = await env.h.redeliver.getHandle(idOf(retried)).status();
  expect(after.attempts).toBeGreaterThan(1);
  // each attempt its own number, those the release made in the hold and had not signalled yet included
  const numbers = env.endpoint.received.filter((r) => r.messageId === retried.delivery.messageId).map((r) => r.attempt);
  expect(new Set(numbers).size).toBe(numbers.length);
  expect(after.hold).toBeUndefined();
  await env.h.redeliver.getHandle(idOf(retried)).cancel();
});

test('cancel through the API and pause through the CLI apply to the delivery taken out of the hold', async () => {
  const answer = await api.call('POST', `/v1/deliveries/${idPath(idOf(cancelled))}/cancel`, KEY);
  expect(answer.status).toBe(200);
  expect(answer.json).toMatchObject({ deliveryId: idOf(cancelled), state: 'cancelled' });
  expect(await env.h.redeliver.getHandle(idOf(cancelled)).result()).toMatchObject({ outcome: 'cancelled' });

  const pausedStatus = await cli('pause', idOf(paused), '--reason', 'maintenance');
  expect(pausedStatus).toMatchObject({ state: 'paused', pause: { reason: 'maintenance' } });
  expect(pausedStatus.attempts).toBeGreaterThanOrEqual(1);
  await env.h.redeliver.getHandle(idOf(paused)).cancel();
});

test("a batch's outcomes wait for its held messages to leave the hold, then for their deliveries", async () => {
  const row = (m: HeldMessage): MessageResult => ({
    messageId: m.delivery.messageId,
    deliveryId: idOf(m),
    disposition: 'held',
    code: 'http-503',
    at: new Date(m.lastAttemptAt!).toISOString(),
    hold: holdId,
  });
  // the batch's result as the batch activity writes it for messages it held
  const batch = { result: async () => ({ results: [row(cancelled), row(statusOnly)] }) as BatchResult } as BatchHandle;
  const submission = new BatchSubmission(
    [batch],
    [idOf(cancelled), idOf(statusOnly)],
    (id) => env.h.redeliver.getHandle(id).result(),
    (h, id) => heldEnd(env.h.client.workflow, h, id),
  );
  let ended = false;
  const outcomes = submission.outcomes().finally(() => (ended = true));
  // one still waits in the hold: no outcome yet, until it leaves (here by a cancel; delivered there, it would say so)
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(ended).toBe(false);
  await env.h.redeliver.getHandle(idOf(statusOnly)).cancel();
  expect((await outcomes).map((o) => [o.deliveryId, o.outcome])).toEqual([
    [idOf(cancelled), 'cancelled'],
    [idOf(statusOnly), 'cancelled'],
  ]);
});
