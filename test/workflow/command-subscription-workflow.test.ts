/**
 * commandSubscriptionWorkflow with stubbed activities (test/support/stub-activities.ts) on Temporal's test
 * environment: the holding activity is a scripted broker, the hand-off a scripted callback. What a user
 * sees: the status query, the result, the command counts, the response deliveries it starts.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { DeliveryResult } from '../../src/delivery/types';
import { Subscriptions, type SubscriptionsOptions } from '../../src/client/subscriptions';
import { subscriptionIdOf, type SubscriptionStatus } from '../../src/subscription/types';
import type { commandSubscriptionWorkflow } from '../../src/workflows/command-subscription';
import { DeliveryKind, DeliveryState, stopSubscriptionUpdate, subscriptionStatusQuery } from '../../src/contract';
import {
  BAD_REQUEST,
  REFUSED,
  ScriptedDeliveries,
  ScriptedSubscriptions,
  UNAVAILABLE,
  type SubscriptionScript,
} from '../support/stub-activities';
import { useStubbedWorker } from '../support/stubbed-worker';
import { waitFor } from '../support/wait';

const subs = new ScriptedSubscriptions(() => w.client);
// the command responses are deliveries of their own, delivered at once by the stubs
const deliveries = new ScriptedDeliveries();
const w = useStubbedWorker({ ...subs.activities(), ...deliveries.activities() }, () => subs.closeAll());
const BACKOFF = { jitter: 'none', initial: '200ms', min: '200ms', multiplier: 2, max: '1s' } as const;

type Handle = WorkflowHandle<typeof commandSubscriptionWorkflow>;

async function start(script: SubscriptionScript, options: SubscriptionsOptions = {}) {
  const device = `dev-${randomUUID().slice(0, 8)}`;
  const id = subscriptionIdOf('acme', device);
  const calls = subs.script(id, script);
  const started = await new Subscriptions(w.client, { taskQueue: w.taskQueue, ...options }).start({
    tenant: 'acme',
    device,
    broker: 'mqtt://broker.example.com:1883',
    callback: 'https://app.example.com/commands',
    policy: BACKOFF,
    downtimeThreshold: '100ms',
  });
  return { id, handle: started.workflow as Handle, calls };
}

const status = (handle: Handle) => handle.query(subscriptionStatusQuery);
const waitForStatus = (handle: Handle, done: (s: SubscriptionStatus) => boolean, what: string) =>
  waitFor(() => status(handle), done, 15_000, what);
const stop = (handle: Handle, reason: string) => handle.executeUpdate(stopSubscriptionUpdate, { args: [reason] });

test('a one-way command is handed over; a two-way one’s answer goes out as a command-response delivery; stop releases', async () => {
  const { id, handle, calls } = await start({});
  const subscribed = await waitForStatus(handle, (s) => s.state === 'subscribed', 'subscribed');
  expect(subscribed).toMatchObject({ holds: 1, attempts: 0, lastError: null });
  expect(subscribed.subscribedSince).not.toBeNull();

  await subs.send(id, { requestId: null, name: 'reboot' });
  await subs.send(id, { requestId: 'req-1', name: 'set-interval' });
  const done = await waitForStatus(handle, (s) => s.commands.handed === 2 && s.commands.responded === 1, 'both commands handed over');
  expect(done.recentCommands).toMatchObject([
    { seq: 1, requestId: null, name: 'reboot', outcome: 'handed', code: 'http-200', responseId: null },
    { seq: 2, requestId: 'req-1', name: 'set-interval', outcome: 'responded', status: 200 },
  ]);

  const response = w.client.workflow.getHandle(done.recentCommands[1]!.responseId!);
  expect(await response.result()).toMatchObject<Partial<DeliveryResult>>({ outcome: 'delivered', attempts: 1 });
  const listed = (await response.describe()).typedSearchAttributes;
  expect([listed.get(DeliveryKind), listed.get(DeliveryState)]).toEqual(['command-response', 'delivered']);

  expect((await stop(handle, 'decommissioned')).commands).toMatchObject({ received: 2, handed: 2 });
  expect(await handle.result()).toMatchObject({
    outcome: 'stopped',
    reason: 'decommissioned',
    commands: { received: 2, handed: 2, responded: 1, failed: 0, queued: 0 },
  });
  expect(calls.released).toBe(1);
  expect(await stop(handle, 'again').catch((e: Error) => e)).toBeInstanceOf(Error);
});

test('the broker away, then a dropped connection: resubscribed after the backoff each time; the downtime counted', async () => {
  const { id, handle, calls } = await start({ holds: [{ fail: REFUSED }, { fail: REFUSED }, { subscribe: true }, { subscribe: true }] });
  const back = await waitForStatus(handle, (s) => s.state === 'subscribed', 'subscribed after two refusals');
  // the count of failed attempts starts over once subscribed; the last error stays for the operator
  expect(back).toMatchObject({ holds: 3, attempts: 0, lastError: { class: 'connection', code: 'net-ECONNREFUSED' } });
  // without a subscription from the start through both waits (200 ms, 400 ms): longer than the threshold
  expect(back.downtime.periods).toHaveLength(1);
  expect(back.downtime.totalMs).toBeGreaterThanOrEqual(600);

  subs.drop(id);
  const again = await waitForStatus(handle, (s) => s.state === 'subscribed' && s.holds === 4, 'subscribed after the drop');
  expect(again).toMatchObject({ attempts: 0, lastError: { class: 'connection', code: 'mqtt-closed' } });
  expect(again.downtime.outages).toBe(1);
  expect(calls.holds).toEqual([1, 2, 3, 4]);
  await stop(handle, 'test over');
  expect(await handle.result()).toMatchObject({ outcome: 'stopped' });
});

test('the broker refuses the subscription (not authorized): rejected at once, nothing to release', async () => {
  const { handle, calls } = await start({ holds: [{ fail: { kind: 'mqtt5', packet: 'suback', reasonCode: 0x87 } }] });
  expect(await handle.result()).toMatchObject({ outcome: 'rejected', lastError: { class: 'client', code: 'mqtt-0x87' } });
  expect(calls).toMatchObject({ holds: [1], released: 0 });
  expect(await status(handle)).toMatchObject({ state: 'rejected' });
});

test('the callback fails: a 503 is retried with the backoff, a 400 fails the command', async () => {
  const { id, handle, calls } = await start({ callback: [UNAVAILABLE, { kind: 'http', status: 200 }, BAD_REQUEST] });
  await waitForStatus(handle, (s) => s.state === 'subscribed', 'subscribed');
  await subs.send(id, { requestId: null, name: 'reboot' });
  await waitForStatus(handle, (s) => s.commands.handed === 1, 'the first command handed over');
  await subs.send(id, { requestId: null, name: 'factory-reset' });
  const failed = await waitForStatus(handle, (s) => s.commands.failed === 1, 'the second command failed');
  expect(failed.recentCommands).toMatchObject([
    { seq: 1, outcome: 'handed', code: 'http-200' },
    { seq: 2, outcome: 'rejected', code: 'http-400' },
  ]);
  expect(calls.handed).toEqual([
    { seq: 1, attempt: 1 },
    { seq: 1, attempt: 2 },
    { seq: 2, attempt: 1 },
  ]);
  await stop(handle, 'test over');
  expect(await handle.result()).toMatchObject({ outcome: 'stopped', commands: { received: 2, handed: 1, failed: 1 } });
});

test('continue-as-new carries the counts and the request ids seen: a command the broker sends again is handed over once', async () => {
  // 5 events: each run continues as new after its first command
  const { id, handle, calls } = await start({}, { historyLimit: 5 });
  await waitForStatus(handle, (s) => s.state === 'subscribed', 'subscribed');
  const firstRun = (await handle.describe()).runId;
  await subs.send(id, { requestId: 'req-7', name: 'open' });
  const carried = await waitForStatus(handle, (s) => s.holds === 2 && s.state === 'subscribed', 'subscribed in the next run');
  expect((await handle.describe()).runId).not.toBe(firstRun);
  expect(carried.commands).toMatchObject({ received: 1, handed: 1, responded: 1 });

  await subs.send(id, { requestId: 'req-7', name: 'open' });
  await subs.send(id, { requestId: 'req-8', name: 'close' });
  await waitForStatus(handle, (s) => s.holds === 3 && s.state === 'subscribed', 'subscribed in the run after');
  await stop(handle, 'test over');
  expect(await handle.result()).toMatchObject({ outcome: 'stopped', commands: { received: 2, handed: 2, responded: 2 } });
  expect(calls.handed.map((h) => h.seq)).toEqual([1, 2]);
});
