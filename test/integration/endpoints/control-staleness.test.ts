import { randomUUID } from 'node:crypto';
import type { DeliveryHandle } from '../../../src/client/index';
import { eventsTo } from '../../support/messages';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/*
 * Endpoint controls apply to every attempt that starts after they returned (issue 31): the worker read the
 * endpoint's control for an attempt just before `pause`, `disable` or `enable`, and the next attempt starts
 * as soon as the change returned; it obeys the control. A change returns once the workers' copies are past
 * their time to live (shortened to 1.5 s here, for worker and client alike), and an older copy is read
 * again before an attempt uses it (after a quiet minute, a pause let an attempt go 10 s later).
 */

const TTL_MS = 1_500;
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

test('pause: the first attempt after it returned is held, not sent', async () => {
  const receiver = receivers[0]!;
  expect((await (await submitOne(receiver)).result()).outcome).toBe('delivered');
  await h.redeliver.endpoint(receiver.url).pause('maintenance');
  const handle = await submitOne(receiver);
  await waitFor(
    async () => (await handle.workflow.describe()).raw.pendingActivities?.[0]?.lastFailure?.message ?? '',
    (reason) => reason.includes('is paused: maintenance'),
    30_000,
    'the attempt to be held by the pause',
  );
  expect(receiver.requests).toHaveLength(1);
}, 60_000);

test('disable: the first attempt after it returned ends the delivery unsent', async () => {
  const receiver = receivers[1]!;
  expect((await (await submitOne(receiver)).result()).outcome).toBe('delivered');
  await h.redeliver.endpoint(receiver.url).disable('retired');
  const result = await (await submitOne(receiver)).result();
  expect(result.outcome).toBe('rejected');
  expect(result.reason).toContain('is disabled: retired');
  expect(receiver.requests).toHaveLength(1);
}, 60_000);

test('enable: the first attempt after it returned is sent', async () => {
  const receiver = receivers[2]!;
  await h.redeliver.endpoint(receiver.url).disable('for now');
  expect((await (await submitOne(receiver)).result()).outcome).toBe('rejected');
  await h.redeliver.endpoint(receiver.url).enable();
  const result = await (await submitOne(receiver)).result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect(receiver.requests).toHaveLength(1);
}, 60_000);
