import { randomUUID } from 'node:crypto';
import type { DeliveryHandle } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { partsOf } from '../../../src/worker-services/worker-parts';
import { eventsTo } from '../../support/messages';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/*
 * Endpoint controls (docs/endpoint-health.md, "Pause, resume, disable"): one update to the endpoint's
 * workflow, read by every worker from its memo; no delivery is told one by one. Each endpoint (receiver) is
 * paused or disabled before anything is sent to it, so the workers' first read of it already says so.
 */

let h: Harness;
let paused: Receiver;
let disabled: Receiver;
let failing: Receiver;

beforeAll(async () => {
  [h, paused, disabled, failing] = await Promise.all([startHarness(testAddress()), startReceiver(), startReceiver(), startReceiver()]);
  for (const r of [paused, disabled]) r.route('/in', () => ({ status: 202 }));
  failing.route('/in', () => ({ status: 503 }));
});
afterAll(async () => {
  await h?.stop();
  await Promise.all([paused?.close(), disabled?.close(), failing?.close()]);
});

const events = (receiver: Receiver, device: string, count: number): DeliveryInput[] =>
  eventsTo(receiver.url, device, count, { initial: '100ms', min: '100ms', max: '1s' });

/** Why the delivery's pending attempt waits (the activity's last failure), '' when none has. */
async function heldBecause(handle: DeliveryHandle): Promise<string> {
  const described = await handle.workflow.describe();
  return described.raw.pendingActivities?.[0]?.lastFailure?.message ?? '';
}

test('pause holds every attempt, none sent; resume lets them all through', async () => {
  const endpoint = h.redeliver.endpoint(paused.url);
  const control = await endpoint.pause('receiver maintenance');
  expect(control.mode).toMatchObject({ state: 'paused', reason: 'receiver maintenance', by: 'operator' });
  const handles = await h.redeliver.submitMany(events(paused, `pause-${randomUUID().slice(0, 8)}`, 5));
  // every delivery has tried and been held (its attempt waits on the server, saying why)
  await waitFor(
    () => Promise.all(handles.map(heldBecause)),
    (reasons) => reasons.every((r) => r.includes('is paused: receiver maintenance')),
    30_000,
    'every delivery to be held by the pause',
  );
  expect(paused.requests).toHaveLength(0);

  expect((await endpoint.resume()).mode).toBeUndefined();
  const results = await Promise.all(handles.map((handle) => handle.result()));
  expect(results.map((r) => r.outcome)).toEqual(Array(5).fill('delivered'));
  expect(results.every((r) => r.attempts === 1)).toBe(true);
  expect(paused.requests).toHaveLength(5);
}, 90_000);

test('disable ends attempts as dead letters saying so, unsent; once resumed, a redrive delivers', async () => {
  const endpoint = h.redeliver.endpoint(disabled.url);
  await endpoint.disable('endpoint retired');
  const handles = await h.redeliver.submitMany(events(disabled, `disable-${randomUUID().slice(0, 8)}`, 3));
  const results = await Promise.all(handles.map((handle) => handle.result()));
  expect(results.map((r) => r.outcome)).toEqual(['rejected', 'rejected', 'rejected']);
  expect(results[0]!.reason).toContain('is disabled: endpoint retired');
  expect(results[0]!.reason).toContain('redrive it once the endpoint is enabled');
  expect(disabled.requests).toHaveLength(0);

  await endpoint.resume();
  // the worker reads the endpoint's control again within CONTROL_TTL_MS; read it now rather than wait for that
  await partsOf(h.worker)!.controls!.refresh(new URL(disabled.url).host);
  const redriven = await h.redeliver.redrive(handles[0]!.deliveryId);
  expect((await redriven.result()).outcome).toBe('delivered');
  expect(disabled.requests).toHaveLength(1);
}, 90_000);

test('auto-disable: an endpoint failing for autoDisableAfter is disabled by itself, and its deliveries end saying why', async () => {
  const endpoint = h.redeliver.endpoint(failing.url);
  await endpoint.set({ autoDisableAfter: '1m' });
  const handles = await h.redeliver.submitMany(events(failing, `auto-${randomUUID().slice(0, 8)}`, 3));
  // failing (judged from the reports) for a minute, then disabled by the endpoint's workflow: no operator
  const control = await waitFor(
    () => endpoint.control(),
    (c) => c.mode !== undefined,
    120_000,
    'the endpoint to disable itself',
  );
  expect(control.mode).toMatchObject({ state: 'disabled', by: 'auto' });
  expect(control.mode!.reason).toMatch(/^failing for .* \(auto-disable after 1 min\)$/);
  const results = await Promise.all(handles.map((handle) => handle.result()));
  expect(results.map((r) => r.outcome)).toEqual(['rejected', 'rejected', 'rejected']);
  expect(results[0]!.reason).toContain('is disabled: failing for');
}, 180_000);
