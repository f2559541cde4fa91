import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startDevServer, type DevServer } from '../../../src/dev/dev-server';
import { freePort } from '../../support/ports';
import { startHarness, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/*
 * A tenant cannot starve another (docs/threat-model.md): one tenant floods a shared endpoint with deliveries
 * that fail slowly (503 after 2 s), enough to fill the worker's 100 attempt slots three times over with first
 * attempts alone, and their retries come back every second. Another tenant's first attempts, to that endpoint
 * and to another, must not queue behind that backlog: the receiver sees them all while most of the flood's
 * first attempts have not come yet. Before deliveries carried their tenant as the task queue's fairness key,
 * they came after 196 to 294 of the flood's 300 first attempts (40 to 105 s later); with it, after 60 to 70.
 */

const FLOOD = 300;
const QUIET = 5;

let h: Harness;
let receiver: Receiver;
/** Another endpoint (its own host:port), and one for the timeout floor's test. */
let elsewhere: Receiver;
let floored: Receiver;

let server: DevServer;

beforeAll(async () => {
  // a dev server of its own, with task-queue fairness on as `redeliver dev` runs it (the suite's has it off)
  server = await startDevServer({ port: await freePort(), uiPort: null, fairness: true });
  // no retry budget: the flood's retries come back as fast as their policy says, as many as the worker takes
  [h, receiver, elsewhere, floored] = await Promise.all([
    startHarness(server.address, { retryBudget: null }),
    startReceiver(),
    startReceiver(),
    startReceiver(),
  ]);
});
afterAll(async () => {
  await h?.stop();
  await Promise.all([receiver?.close(), elsewhere?.close(), floored?.close()]);
  await server?.stop();
});

test("a tenant's flood of failing deliveries to a shared endpoint does not hold back another tenant's first attempts", async () => {
  const run = randomUUID().slice(0, 8);
  const [flooder, quiet] = [`flooder-${run}`, `quiet-${run}`];
  const path = `/in-${run}`;
  const event = (tenant: string, to: Receiver, i: number): DeliveryInput => ({
    kind: 'event',
    tenant,
    device: 'device-1',
    messageId: `${tenant}-${to === receiver ? 'shared' : 'other'}-${i}`,
    target: `${to.url}${path}`,
    payload: { i },
    policy: { jitter: 'none', initial: '1s', min: '1s', max: '1s' },
  });
  const of = (tenant: string) => (r: { messageId: string | undefined }) => r.messageId?.startsWith(tenant) === true;
  receiver.route(path, (r) => (r.messageId?.startsWith(flooder) ? { status: 503, delayMs: 2_000 } : { status: 202 }));

  await h.redeliver.submitMany(Array.from({ length: FLOOD }, (_, i) => event(flooder, receiver, i)));
  // the worker's slots are full of the flood's attempts before the other tenant submits
  await waitFor(
    async () => receiver.requests.filter(of(flooder)).length,
    (n) => n >= 50,
    60_000,
    'the flood to fill the slots',
  );
  const quietOnes = [
    ...Array.from({ length: QUIET }, (_, i) => event(quiet, receiver, i)),
    ...Array.from({ length: QUIET }, (_, i) => event(quiet, elsewhere, i)),
  ];
  await h.redeliver.submitMany(quietOnes);
  const quietRequests = () => [...receiver.requests, ...elsewhere.requests].filter(of(quiet));
  await waitFor(
    async () => quietRequests().length,
    (n) => n >= 2 * QUIET,
    180_000,
    "the quiet tenant's first attempts",
  );

  // how many of the flood's first attempts the shared endpoint had seen when the quiet tenant's last one came
  const lastQuietAt = Math.max(...quietRequests().map((r) => r.at));
  const floodFirstsBefore = new Set(receiver.requests.filter((r) => of(flooder)(r) && r.at <= lastQuietAt).map((r) => r.messageId)).size;
  console.log(`the quiet tenant's ${2 * QUIET} first attempts came after ${floodFirstsBefore} of the flood's ${FLOOD} first attempts`);
  expect(quietRequests().every((r) => r.attempt === 1)).toBe(true);
  // not queued behind the flood's backlog: it had not half drained
  expect(floodFirstsBefore).toBeLessThan(FLOOD / 2);
}, 240_000);

test("a flood of 1 ms timeouts a producer chose does not make a shared endpoint failing, and another tenant's deliveries flow", async () => {
  const run = randomUUID().slice(0, 8);
  const endpoint = new URL(floored.url).host;
  // the breaker on: a failing endpoint would hold every tenant's attempts (and auto-disable would follow it)
  await h.redeliver.endpoint(endpoint).set({ breaker: 'on' });
  floored.route('/in', (r) => (r.messageId?.startsWith('hasty') ? { status: 202, delayMs: 300 } : { status: 202 }));
  const event = (tenant: string, i: number, timeout?: number): DeliveryInput => ({
    kind: 'event',
    tenant,
    device: 'device-1',
    messageId: `${tenant}-${i}`,
    target: timeout === undefined ? `${floored.url}/in` : { url: `${floored.url}/in`, timeout },
    payload: { i },
    policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
  });
  const hasty = await h.redeliver.submitMany(Array.from({ length: 20 }, (_, i) => event(`hasty-${run}`, i, 1)));
  // 40 timeouts (as their statuses tell, which lag): before the floor, the endpoint was failing after the first three
  await waitFor(
    () => Promise.all(hasty.map(async (d) => (await d.status()).attempts)),
    (attempts) => attempts.reduce((a, b) => a + b, 0) >= 40,
    60_000,
    '40 timeouts',
  );
  const calm = await h.redeliver.submitMany(Array.from({ length: 5 }, (_, i) => event(`calm-${run}`, i)));
  const results = await Promise.all(calm.map((d) => d.result()));
  await h.reporter!.flush();

  expect(results.map((r) => [r.outcome, r.attempts])).toEqual(Array(5).fill(['delivered', 1]));
  const [view] = await h.redeliver.endpoints(endpoint);
  expect(view?.state).toBe('healthy');
  expect((await h.redeliver.endpoint(endpoint).control()).breaker?.open ?? false).toBe(false);
  // they still count for their own deliveries: still retrying, each attempt a timeout
  const status = await hasty[0]!.status();
  expect(['timeout', 'net-ETIMEDOUT']).toContain(status.lastError?.code);
  await Promise.all(hasty.map((d) => d.cancel({ waitMs: 0 })));
}, 120_000);
