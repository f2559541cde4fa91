import { randomUUID } from 'node:crypto';
import { lostRuns } from '../../../bench/soak-run';
import * as limits from '../../../src/worker-services/limits';
import type { DeliveryInput } from '../../../src/delivery/types';
import { mostInFlight, mostInWindow } from '../../support/receiver';
import { startThreadReceiver, type ThreadReceiver } from '../../support/receiver-thread';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

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
  const letGo = recordLetGo(device);
  const handles = await a.redeliver.submitMany(Array.from({ length: 300 }, (_, i) => event(url, device, i)));
  const results = await Promise.all(handles.map((h) => h.result()));
  letGo.stop();

  expect(results.filter((r) => r.outcome === 'delivered')).toHaveLength(300);
  const requests = await receiver.requests(path);
  // attempt 2 of each message that failed first, once; sent twice only where Temporal ran the retrying activity again
  // after a run of it overran its time on a stalled worker, before its heartbeat said the attempt was sent
  // (at-least-once, the same Message-Id: the soak explains such repeats alike; seen once in a full run, 103 for 100)
  const seconds = requests.filter((r) => r.attempt === 2).map((r) => r.messageId!);
  expect(new Set(seconds).size).toBe(100);
  const repeated = [...new Set(seconds.filter((id, i) => seconds.indexOf(id) !== i))];
  const unexplained: string[] = [];
  for (const id of repeated) if ((await lostRuns(a.redeliver.getHandle(`delivery/acme/${device}/${id}`))) === 0) unexplained.push(id);
  expect(unexplained).toEqual([]);
  expect(mostInFlight(requests)).toBeLessThanOrEqual(8);
  // each worker lets its attempts go 1/share apart: at most the rate in any second, one more per worker whose
  // stamp, taken as passLimits returns, came a few ms after its grant and shares its second with the next
  const sent = letGo.times();
  const letGoInASecond = mostInWindow(
    [...sent.values()].map((startedAt) => ({ startedAt })),
    1_000,
  );
  expect(letGoInASecond).toBeLessThanOrEqual(30 + WORKERS);
  // every request was let go before it arrived. At the endpoint, one that arrived `slowest` ms after it was let
  // go can share a second with the cells let go after it: ceil(slowest / cell) more per worker, one when it is
  // under a cell (measured here: 206 ms once, a stall of this process's event loop; CI once counted 33 for 30/s)
  const late = requests.map((r) => r.startedAt - sent.get(`${r.messageId}#${r.attempt}`)!);
  expect(late.filter((ms) => !(ms >= 0))).toEqual([]);
  const slowest = Math.max(...late);
  const cell = 1000 / (30 / WORKERS);
  const atTheEndpoint = mostInWindow(requests, 1_000);
  console.log(
    `let go in any second: ${letGoInASecond}; at the endpoint: ${atTheEndpoint}; slowest arrival ${slowest} ms after it was let go`,
  );
  expect(atTheEndpoint).toBeLessThanOrEqual(30 + WORKERS * Math.ceil(slowest / cell));
}, 180_000);

/** When each attempt of `device`'s messages was let go by the limits (passLimits), by `messageId#attempt`. */
function recordLetGo(device: string) {
  const original = limits.passLimits;
  const times = new Map<string, number>();
  const counts = new Map<string, number>();
  const spy = jest.spyOn(limits, 'passLimits').mockImplementation(async (admission, delivery, context) => {
    const passed = await original(admission, delivery, context);
    if (passed.go && delivery.device === device) {
      const attempt = (counts.get(delivery.messageId) ?? 0) + 1;
      counts.set(delivery.messageId, attempt);
      times.set(`${delivery.messageId}#${attempt}`, Date.now());
    }
    return passed;
  });
  return { times: () => times, stop: () => spy.mockRestore() };
}
