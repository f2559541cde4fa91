import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Webhook } from 'standardwebhooks';
import { createEventActivities } from '../../../src/activities/operational-events';
import { Redeliver } from '../../../src/client/index';
import type { OperationalEvent } from '../../../src/endpoints/operational-events';
import { webhookIdOf } from '../../../src/transports/signing';
import type { DeliveryInput } from '../../../src/delivery/types';
import { freePort } from '../../support/ports';
import { operatorEventsEnv } from '../../support/operator-events';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../support/receiver';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

/*
 * Operational events (docs/endpoint-health.md, "Operational events"), on a real `redeliver worker` configured
 * only by its environment: every event is a delivery of its own to the operator URL, signed and verified here
 * by the `standardwebhooks` package; an operator URL that answers 503 for a while gets them once it is back,
 * each once; a storm of dead letters arrives as a few events of its tenant whose counts add up; the worker's Prometheus
 * endpoint shows the transitions and the dead letters.
 */

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const N_DEAD = 60;
let worker: WorkerProcess;
let connection: Connection;
let redeliver: Redeliver;
let ops: Receiver;
let app: Receiver;
let bad: Receiver;
let metricsUrl: string;
let opsDown = true;
let appDown = true;

beforeAll(async () => {
  [ops, app, bad, connection] = await Promise.all([
    startReceiver(),
    startReceiver(),
    startReceiver(),
    connectClient({ address: testAddress() }),
  ]);
  ops.route('/ops', () => ({ status: opsDown ? 503 : 202 }));
  app.route('/in', () => ({ status: appDown ? 503 : 202 }));
  bad.route('/in', () => ({ status: 400 }));
  const taskQueue = `events-${randomUUID()}`;
  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  worker = spawnWorker({
    address: testAddress(),
    taskQueue,
    env: {
      ...operatorEventsEnv(ops.url, SECRET),
      REDELIVER_PROMETHEUS_ADDRESS: `127.0.0.1:${metricsPort}`,
    },
  });
  await worker.ready;
  redeliver = new Redeliver(new Client({ connection }), { taskQueue });
});
afterAll(async () => {
  await worker?.kill('SIGTERM');
  await connection?.close();
  await Promise.all([ops?.close(), app?.close(), bad?.close()]);
});

interface Envelope {
  type: string;
  timestamp: string;
  data: { endpoint: string; state: string; since: string; reason: string; count?: number; firstDeliveryId?: string; tenant?: string };
}

/** Verified by the receivers' own library: throws on a bad signature. */
const verified = (r: ReceivedRequest): Envelope => new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>) as Envelope;
const hostOf = (r: Receiver) => new URL(r.url).host;
/** The events about `endpoint` the operator URL has taken (2xx), each verified, by webhook-id. */
const accepted = (endpoint: string): Map<string, Envelope[]> => {
  const byId = new Map<string, Envelope[]>();
  for (const r of ops.requests.filter((r) => r.outcome === 202)) {
    const event = verified(r);
    if (event.data.endpoint !== endpoint) continue;
    const id = r.headers['webhook-id'] as string;
    byId.set(id, [...(byId.get(id) ?? []), event]);
  }
  return byId;
};
const tried = (endpoint: string, type: string) =>
  ops.requests.filter((r) => (JSON.parse(r.body) as Envelope).type === type && (JSON.parse(r.body) as Envelope).data.endpoint === endpoint);
/** Waits until the operator URL has been sent an alert of `type` about `endpoint` (answered or not). */
const triedOnce = (endpoint: string, type: string) =>
  waitFor(
    async () => tried(endpoint, type).length,
    (n) => n > 0,
    60_000,
    `a ${type} alert`,
  );

const events = (receiver: Receiver, count: number): DeliveryInput[] =>
  Array.from({ length: count }, (_, i) => ({
    kind: 'event',
    tenant: 'acme',
    device: `ev-${randomUUID().slice(0, 8)}`,
    messageId: `m-${i}`,
    target: `${receiver.url}/in`,
    payload: { i },
    policy: { jitter: 'none', initial: '300ms', min: '300ms', max: '1s' },
  }));

test('failing, then recovered: each told once, signed, though the operator URL was down when both happened', async () => {
  const endpoint = hostOf(app);
  const handles = await redeliver.submitMany(events(app, 3));
  // the operator URL answers 503 while the endpoint fails and recovers: both alerts are retried there
  await triedOnce(endpoint, 'endpoint.failing');
  appDown = false;
  expect((await Promise.all(handles.map((h) => h.result()))).map((r) => r.outcome)).toEqual(['delivered', 'delivered', 'delivered']);
  await triedOnce(endpoint, 'endpoint.recovered');

  opsDown = false;
  const told = await waitFor(
    async () => accepted(endpoint),
    (byId) => byId.size === 2,
    120_000,
    'both alerts to arrive',
  );
  // each alert's delivery has ended delivered: nothing more will come of it
  const device = `operator-${createHash('sha256').update(`${ops.url}/ops`).digest('hex').slice(0, 12)}`;
  for (const id of told.keys()) {
    // the event's id is its deliveries' message id; the webhook-id is made from the delivery id
    const eventId = ops.requests.find((r) => r.headers['webhook-id'] === id)!.headers['message-id'] as string;
    const deliveryId = `delivery/redeliver/${device}/${eventId}`;
    expect(webhookIdOf(deliveryId)).toBe(id);
    expect((await redeliver.getHandle(deliveryId).result()).outcome).toBe('delivered');
  }
  const byType = [...accepted(endpoint).values()].map((copies) => {
    expect(copies).toHaveLength(1); // accepted once
    return copies[0]!;
  });
  expect(byType.map((e) => e.type).sort()).toEqual(['endpoint.failing', 'endpoint.recovered']);
  const failing = byType.find((e) => e.type === 'endpoint.failing')!;
  expect(failing.data).toMatchObject({ endpoint, state: 'failing' });
  expect(failing.data.reason).toContain('http-503');
  // every attempt the operator URL saw carried one of the two alerts' ids: none was sent as a second message
  const ids = new Set(
    ops.requests.filter((r) => (JSON.parse(r.body) as Envelope).data.endpoint === endpoint).map((r) => r.headers['webhook-id']),
  );
  expect(ids).toEqual(new Set(told.keys()));
}, 240_000);

test('a storm of dead letters arrives as a few events of its tenant whose counts add up', async () => {
  const endpoint = 'tenant:acme';
  const inputs = events(bad, N_DEAD);
  const results = await Promise.all((await redeliver.submitMany(inputs)).map((h) => h.result()));
  expect(results.every((r) => r.outcome === 'rejected')).toBe(true);
  // the first at once, the rest when the 30 s window has passed
  const told = await waitFor(
    async () => [...accepted(endpoint).values()].map((copies) => copies[0]!),
    (all) => all.reduce((n, e) => n + e.data.count!, 0) >= N_DEAD,
    90_000,
    'the dead letters to be told',
  );
  expect(told.every((e) => e.type === 'deliveries.dead-lettered')).toBe(true);
  expect(told.reduce((n, e) => n + e.data.count!, 0)).toBe(N_DEAD);
  expect(told.length).toBeLessThanOrEqual(3);
  const deliveryIds = new Set(inputs.map((i) => `delivery/acme/${i.device}/${i.messageId}`));
  for (const e of told) expect(deliveryIds.has(e.data.firstDeliveryId!)).toBe(true);
  expect(told.every((e) => e.data.tenant === 'acme')).toBe(true);
}, 150_000);

test('disable is told once; the metrics show transitions, state and dead letters by endpoint', async () => {
  await redeliver.endpoint(app.url).disable('retired');
  const told = await waitFor(
    async () => [...accepted(hostOf(app)).values()].flat().filter((e) => e.type === 'endpoint.disabled'),
    (all) => all.length > 0,
    60_000,
    'the disabled alert',
  );
  expect(told).toHaveLength(1);
  expect(told[0]!.data).toMatchObject({ state: 'disabled', reason: 'retired' });

  const metrics = await (await fetch(metricsUrl)).text();
  const value = (name: string, labels: Record<string, string>) => {
    const line = metrics
      .split('\n')
      .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };
  expect(value('redeliver_endpoint_transitions_total', { endpoint: hostOf(app), to: 'failing' })).toBe(1);
  expect(value('redeliver_endpoint_transitions_total', { endpoint: hostOf(app), to: 'recovering' })).toBe(1);
  expect(value('redeliver_endpoint_transitions_total', { endpoint: hostOf(app), to: 'disabled' })).toBe(1);
  expect(value('redeliver_dead_letters_total', { endpoint: hostOf(bad) })).toBe(N_DEAD);
  expect(value('redeliver_endpoint_state', { endpoint: hostOf(bad) })).toBe(0);
}, 90_000);

test('an event announced again (a retried activity) starts no second delivery', async () => {
  const client = new Client({ connection });
  const { announceEvents } = createEventActivities({ client, operator: { urls: [`${ops.url}/ops`], signing: 'ops' } });
  // a task queue no worker polls: the delivery is started, never attempted
  const env = new MockActivityEnvironment({ taskQueue: `unpolled-${randomUUID()}` });
  const at = Date.now();
  const event: OperationalEvent = {
    id: `endpoint.failing.retried.example.com.1.${at}`,
    type: 'endpoint.failing',
    at,
    data: { endpoint: 'retried.example.com', state: 'failing', since: new Date(at).toISOString(), reason: 'http-503' },
  };
  const [deliveryId] = (await env.run(announceEvents, [event])) as string[];
  const handle = client.workflow.getHandle(deliveryId!);
  const { runId } = await handle.describe();
  expect(await env.run(announceEvents, [event])).toEqual([deliveryId]);
  expect((await handle.describe()).runId).toBe(runId);
  await handle.terminate('test over');
});
