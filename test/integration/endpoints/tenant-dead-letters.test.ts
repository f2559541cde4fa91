import { randomBytes, randomUUID } from 'node:crypto';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Webhook } from 'standardwebhooks';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { operatorEventsEnv } from '../../support/operator-events';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../support/receiver';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

/*
 * Dead letters told per tenant (issue 31; docs/endpoint-health.md, "Operational events"), on a real
 * `redeliver worker` configured by its environment: one tenant's deliveries dead-letter on 40 endpoints (40
 * receivers on loopback, each answering 400) within one window, and the operator URL gets a couple of signed
 * `deliveries.dead-lettered` events, not one per endpoint, whose counts add up to the dead letters.
 */

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const ENDPOINTS = 40;
const PER_ENDPOINT = 2;
const TENANT = `t-${randomUUID().slice(0, 8)}`;
let worker: WorkerProcess;
let connection: Connection;
let redeliver: Redeliver;
let ops: Receiver;
let refusing: Receiver[];

beforeAll(async () => {
  [ops, connection, ...refusing] = await Promise.all([
    startReceiver(),
    connectClient({ address: testAddress() }),
    ...Array.from({ length: ENDPOINTS }, () => startReceiver()),
  ]);
  ops.route('/ops', () => ({ status: 202 }));
  for (const r of refusing) r.route('/in', () => ({ status: 400 }));
  const taskQueue = `tenant-events-${randomUUID()}`;
  worker = spawnWorker({
    address: testAddress(),
    taskQueue,
    env: operatorEventsEnv(ops.url, SECRET),
  });
  await worker.ready;
  redeliver = new Redeliver(new Client({ connection }), { taskQueue });
});
afterAll(async () => {
  await worker?.kill('SIGTERM');
  await connection?.close();
  await Promise.all([ops?.close(), ...(refusing ?? []).map((r) => r.close())]);
});

interface DeadLettered {
  type: string;
  data: { endpoint: string; tenant?: string; count: number; endpoints?: Record<string, number> };
}

/** The dead-letter events the operator URL took, each verified by `standardwebhooks` (throws on a bad signature), by webhook-id. */
const told = (): Map<string, DeadLettered[]> => {
  const byId = new Map<string, DeadLettered[]>();
  for (const r of ops.requests.filter((r: ReceivedRequest) => r.outcome === 202)) {
    const event = new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>) as DeadLettered;
    if (event.type !== 'deliveries.dead-lettered') continue;
    const id = r.headers['webhook-id'] as string;
    byId.set(id, [...(byId.get(id) ?? []), event]);
  }
  return byId;
};
const counted = (events: DeadLettered[]) => events.reduce((n, e) => n + e.data.count, 0);

test('dead letters on 40 endpoints of one tenant within a window: a couple of events, counts adding up by endpoint', async () => {
  const inputs: DeliveryInput[] = refusing.flatMap((r, i) =>
    Array.from({ length: PER_ENDPOINT }, (_, j) => ({
      kind: 'event' as const,
      tenant: TENANT,
      device: `dev-${i}`,
      messageId: `m-${j}`,
      target: `${r.url}/in`,
      payload: { i, j },
    })),
  );
  const results = await Promise.all((await redeliver.submitMany(inputs)).map((h) => h.result()));
  expect(results.every((r) => r.outcome === 'rejected')).toBe(true);
  const dead = inputs.length;

  // the first at once, the rest when the 30 s window has passed
  const events = await waitFor(
    async () => [...told().values()].map((copies) => copies[0]!),
    (all) => counted(all) >= dead,
    90_000,
    'the dead letters to be told',
  );
  expect(counted(events)).toBe(dead);
  expect(events.length).toBeLessThanOrEqual(3);
  // each event's delivery was taken once: its id is decided by the tenant's workflow, not per attempt
  expect([...told().values()].every((copies) => copies.length === 1)).toBe(true);
  for (const e of events) expect(e.data).toMatchObject({ endpoint: `tenant:${TENANT}`, tenant: TENANT });
  const byEndpoint: Record<string, number> = {};
  for (const e of events)
    for (const [endpoint, n] of Object.entries(e.data.endpoints!)) byEndpoint[endpoint] = (byEndpoint[endpoint] ?? 0) + n;
  expect(byEndpoint).toEqual(Object.fromEntries(refusing.map((r) => [new URL(r.url).host, PER_ENDPOINT])));
}, 150_000);
