import { randomUUID } from 'node:crypto';
import type { DeliveryHandle } from '../../src/client';
import { eventsTo } from '../support/messages';
import { startReceiver, type Receiver } from '../support/receiver';
import { startHarness, testAddress, type Harness } from '../support/temporal';
import { waitFor } from '../support/wait';

/*
 * Endpoint controls after a quiet spell (issue 31): the worker's copy of the endpoint's control is older than
 * its time to live when the next attempt comes, after `pause`, `disable` or `enable` returned; the attempt
 * obeys the control. The time to live is shortened to 300 ms, so that a copy gets that old in a moment.
 */

const TTL_MS = 300;
let h: Harness;
let receivers: Receiver[];

beforeAll(async () => {
  [h, ...receivers] = await Promise.all([
    startHarness(testAddress(), { controlTtlMs: TTL_MS }),
    startReceiver(),
    startReceiver(),
    startReceiver(),
  ]);
  for (const r of receivers) r.route('/in', () => ({ status: 202 }));
});
afterAll(async () => {
  await h?.stop();
  await Promise.all((receivers ?? []).map((r) => r.close()));
});

const submitOne = async (receiver: Receiver): Promise<DeliveryHandle> =>
  (
    await h.redeliver.submitMany(
      eventsTo(receiver.url, `stale-${randomUUID().slice(0, 8)}`, 1, { initial: '100ms', min: '100ms', max: '1s' }),
    )
  )[0]!;
/** The worker's copy, read by the last attempt, is now older than its time to live. */
const quietSpell = () => new Promise((resolve) => setTimeout(resolve, TTL_MS + 100));

test('pause: the first attempt after a quiet spell is held, not sent', async () => {
  const receiver = receivers[0]!;
  expect((await (await submitOne(receiver)).result()).outcome).toBe('delivered');
  await h.redeliver.endpoint(receiver.url).pause('maintenance');
  await quietSpell();
  const handle = await submitOne(receiver);
  await waitFor(
    async () => (await handle.workflow.describe()).raw.pendingActivities?.[0]?.lastFailure?.message ?? '',
    (reason) => reason.includes('is paused: maintenance'),
    30_000,
    'the attempt to be held by the pause',
  );
  expect(receiver.requests).toHaveLength(1);
}, 60_000);

test('disable: the first attempt after a quiet spell ends the delivery unsent', async () => {
  const receiver = receivers[1]!;
  expect((await (await submitOne(receiver)).result()).outcome).toBe('delivered');
  await h.redeliver.endpoint(receiver.url).disable('retired');
  await quietSpell();
  const result = await (await submitOne(receiver)).result();
  expect(result.outcome).toBe('rejected');
  expect(result.reason).toContain('is disabled: retired');
  expect(receiver.requests).toHaveLength(1);
}, 60_000);

test('enable: the first attempt after a quiet spell is sent', async () => {
  const receiver = receivers[2]!;
  await h.redeliver.endpoint(receiver.url).disable('for now');
  expect((await (await submitOne(receiver)).result()).outcome).toBe('rejected');
  await h.redeliver.endpoint(receiver.url).enable();
  await quietSpell();
  const result = await (await submitOne(receiver)).result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect(receiver.requests).toHaveLength(1);
}, 60_000);
