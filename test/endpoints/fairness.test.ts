import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../src/delivery/types';
import { startReceiver, type Receiver } from '../support/receiver';
import { startHarness, testAddress, type Harness } from '../support/temporal';
import { waitFor } from '../support/wait';

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

beforeAll(async () => {
  // no retry budget: the flood's retries come back as fast as their policy says, as many as the worker takes
  [h, receiver] = await Promise.all([startHarness(testAddress(), { retryBudget: null }), startReceiver()]);
});
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
});

test("a tenant's flood of failing deliveries to a shared endpoint does not hold back another tenant's first attempts", async () => {
  const run = randomUUID().slice(0, 8);
  const [flooder, quiet] = [`flooder-${run}`, `quiet-${run}`];
  const [shared, other] = [`/shared-${run}`, `/other-${run}`];
  const event = (tenant: string, path: string, i: number): DeliveryInput => ({
    kind: 'event',
    tenant,
    device: 'device-1',
    messageId: `${tenant}${path}-${i}`.replaceAll('/', '-'),
    target: `${receiver.url}${path}`,
    payload: { i },
    policy: { jitter: 'none', initial: '1s', min: '1s', max: '1s' },
  });
  const of = (tenant: string) => (r: { messageId: string | undefined }) => r.messageId?.startsWith(tenant) === true;
  receiver.route(shared, (r) => (r.messageId?.startsWith(flooder) ? { status: 503, delayMs: 2_000 } : { status: 202 }));

  await h.redeliver.submitMany(Array.from({ length: FLOOD }, (_, i) => event(flooder, shared, i)));
  // the worker's slots are full of the flood's attempts before the other tenant submits
  await waitFor(
    async () => receiver.requests.filter(of(flooder)).length,
    (n) => n >= 50,
    60_000,
    'the flood to fill the slots',
  );
  const quietOnes = [
    ...Array.from({ length: QUIET }, (_, i) => event(quiet, shared, i)),
    ...Array.from({ length: QUIET }, (_, i) => event(quiet, other, i)),
  ];
  await h.redeliver.submitMany(quietOnes);
  await waitFor(
    async () => receiver.requests.filter(of(quiet)).length,
    (n) => n >= 2 * QUIET,
    180_000,
    "the quiet tenant's first attempts",
  );

  // how many of the flood's first attempts the receiver had seen when the quiet tenant's last one came
  const lastQuiet = receiver.requests.length - 1 - [...receiver.requests].reverse().findIndex(of(quiet));
  const floodFirstsBefore = new Set(
    receiver.requests
      .slice(0, lastQuiet)
      .filter(of(flooder))
      .map((r) => r.messageId),
  ).size;
  console.log(`the quiet tenant's ${2 * QUIET} first attempts came after ${floodFirstsBefore} of the flood's ${FLOOD} first attempts`);
  expect(receiver.requests.filter(of(quiet)).every((r) => r.attempt === 1)).toBe(true);
  // not queued behind the flood's backlog: it had not half drained
  expect(floodFirstsBefore).toBeLessThan(FLOOD / 2);
}, 240_000);
