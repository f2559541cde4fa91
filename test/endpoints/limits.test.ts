import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../src/delivery/types';
import { mostInFlight, mostInWindow } from '../support/receiver';
import { startThreadReceiver, type ThreadReceiver } from '../support/receiver-thread';
import { startHarness, testAddress, type Harness } from '../support/temporal';
import { waitFor } from '../support/wait';

/*
 * Per-endpoint limits over every attempt (docs/endpoint-health.md, "Limits"), set with the client API and
 * applied by two workers sharing them. The receiver's own log is the evidence: requests in flight at
 * once (headers in to answer out) and requests arriving within any second. It runs on a thread of its own:
 * on the workers' event loop, a pause of that loop stamped the requests that came during it all at its end
 * (38 in one second for a limit of 30 once, on a loaded CI machine).
 */

let a: Harness;
let b: Harness;
/** a and b: the limits are shared between them. */
const WORKERS = 2;
let receiver: ThreadReceiver;

beforeAll(async () => {
  const taskQueue = `test-limits-${randomUUID()}`;
  // no retry budget: the limits alone bound the retries here
  [a, b, receiver] = await Promise.all([
    startHarness(testAddress(), { taskQueue, retryBudget: null }),
    startHarness(testAddress(), { taskQueue, retryBudget: null }),
    startThreadReceiver(),
  ]);
  // each worker counts the workers on the task queue every 10 s and takes its share of the limits: until both
  // see the other polling, each would take the whole (docs/endpoint-health.md); look again until they do
  const shares = async () => {
    await Promise.all([a.reporter!.countWorkers(), b.reporter!.countWorkers()]);
    return [a.reporter!.share(), b.reporter!.share()];
  };
  await waitFor(shares, (s) => s.every((share) => share === 0.5), 30_000, 'both workers to see each other');
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await receiver?.close();
});

const event = (url: string, device: string, i: number): DeliveryInput => ({
  kind: 'event',
  tenant: 'acme',
  device,
  messageId: `${device}-${i}`,
  target: url,
  payload: { i },
  policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
});

test('10,000 first attempts released at once (batches) to an endpoint limited to 50 in flight and 200/s: never more at the endpoint, all delivered', async () => {
  const path = `/storm-${randomUUID().slice(0, 8)}`;
  // answers slow enough that 50 in flight binds before 200/s does some of the time (Little: 50 / 0.25 s = 200/s)
  await receiver.route(path, { status: 202, delayMs: 250 });
  const url = `${receiver.url}${path}`;
  await a.redeliver.endpoint(url).set({ maxInFlight: 50, rate: '200/s' });
  const device = `storm-${randomUUID().slice(0, 8)}`;
  const submission = await a.redeliver.submitBatch(Array.from({ length: 10_000 }, (_, i) => event(url, device, i)));
  const results = await Promise.all(submission.batches.map((batch) => batch.result()));

  expect(results.reduce((n, r) => n + r.delivered, 0)).toBe(10_000);
  const requests = await receiver.requests(path);
  expect(new Set(requests.map((r) => r.messageId)).size).toBe(10_000);
  expect(mostInFlight(requests)).toBeLessThanOrEqual(50);
  expect(mostInWindow(requests, 1_000)).toBeLessThanOrEqual(200);
}, 240_000);

test('single deliveries, first attempts and retries alike, stay within the limits: 300 at once, a third failing first', async () => {
  const path = `/singles-${randomUUID().slice(0, 8)}`;
  await receiver.route(path, { status: 202, delayMs: 100, firstFails: { every: 3, status: 503 } });
  const url = `${receiver.url}${path}`;
  const control = await b.redeliver.endpoint(url).set({ maxInFlight: 8, rate: 30 });
  expect(control.settings).toEqual({ maxInFlight: 8, rate: 30 });
  const device = `singles-${randomUUID().slice(0, 8)}`;
  const handles = await a.redeliver.submitMany(Array.from({ length: 300 }, (_, i) => event(url, device, i)));
  const results = await Promise.all(handles.map((h) => h.result()));

  expect(results.filter((r) => r.outcome === 'delivered')).toHaveLength(300);
  const requests = await receiver.requests(path);
  expect(requests.filter((r) => r.attempt === 2)).toHaveLength(100);
  expect(mostInFlight(requests)).toBeLessThanOrEqual(8);
  // one more per worker at the endpoint: a worker's cells leave exactly 1/share apart, and one that arrives a
  // few ms late shares its second with the next (docs/endpoint-health.md, "What they mean")
  expect(mostInWindow(requests, 1_000)).toBeLessThanOrEqual(30 + WORKERS);
}, 180_000);
