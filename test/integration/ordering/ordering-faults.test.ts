/**
 * The ordering keys' promise under faults (docs/ordering.md): 1,000 messages on 10 keys to an endpoint that
 * fails a fifth of the attempts at random (5xx, connection resets), the worker killed with SIGKILL in the
 * middle; at the endpoint, the first successful arrival of each message follows its key's submit order, and
 * none is lost. Half the keys are submitted one message at a time, half in batches.
 */
import { randomUUID } from 'node:crypto';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { runWorker } from '../../../src/worker';
import { randomFaults } from '../../support/receiver';
import { useHarnessAndReceiver } from '../../support/setup';
import { createTestWorker, testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';
import { spawnWorker } from '../../support/worker-process';

const env = useHarnessAndReceiver();
/** What a test started outside the harness, stopped whether it passed or not. */
const stopAfter: (() => Promise<void>)[] = [];
afterAll(() => Promise.all(stopAfter.map((stop) => stop())));

const KEYS = 10;
const PER_KEY = 100;

test("1,000 messages on 10 keys, 20 % faults, a worker SIGKILLed in the middle: each key's first arrivals follow submit order, none lost", async () => {
  const run = randomUUID().slice(0, 8);
  const taskQueue = `ordering-faults-${run}`;
  const redeliver = new Redeliver(env.h.client, { taskQueue });
  env.receiver.route('/proof', randomFaults({ seed: run, serverError: 0.1, reset: 0.1, slow: 0, slowMs: 0 }));
  const keyOf = (k: number) => `proof-${run}-${k}`;
  // message n of every key before message n + 1 of any: submit order interleaves the keys
  const inputs: DeliveryInput[] = [];
  for (let n = 0; n < PER_KEY; n++) {
    for (let k = 0; k < KEYS; k++) {
      inputs.push({
        kind: 'event',
        tenant: 'acme',
        device: `valve-${k}`,
        orderingKey: keyOf(k),
        messageId: `${keyOf(k)}-${n}`,
        payload: { k, n },
        // short timeouts: what the killed worker held is retried within seconds
        target: { url: `${env.receiver.url}/proof`, timeout: '2s' },
        policy: { jitter: 'none', initial: '100ms', min: '100ms', max: '100ms' },
      });
    }
  }
  const single = inputs.filter((_, i) => i % KEYS < KEYS / 2);
  const batched = inputs.filter((_, i) => i % KEYS >= KEYS / 2);

  const doomed = spawnWorker({ address: testAddress(), taskQueue });
  stopAfter.push(() => doomed.kill('SIGKILL'));
  await doomed.ready;
  // every submit called in order at once (the client keeps a key's order); the batched half cut into 5 batches
  const [handles, submission] = await Promise.all([
    Promise.all(single.map((input) => redeliver.submit(input))),
    redeliver.submitBatch(batched, { maxMessages: 100 }),
  ]);
  expect(submission.batches).toHaveLength(5);

  // killed once a third has arrived: deliveries, attempts and sequencers are mid-flight on it
  await waitFor(
    async () => env.receiver.accepted().size,
    (n) => n >= 300,
    300_000,
    'a third of the messages delivered',
  );
  await doomed.kill('SIGKILL');
  const arrivedBeforeKill = env.receiver.accepted().size;
  expect(arrivedBeforeKill).toBeLessThan(1_000);

  const heir = await createTestWorker(testAddress(), taskQueue);
  const [results, outcomes] = await runWorker(heir, Promise.all([Promise.all(handles.map((x) => x.result())), submission.outcomes()]));

  // nothing lost: every message delivered, and the receiver holds each one
  expect([...results, ...outcomes].filter((r) => r.outcome !== 'delivered')).toEqual([]);
  expect(outcomes).toHaveLength(batched.length);
  const accepted = env.receiver.accepted();
  expect(inputs.filter((i) => !accepted.has(i.messageId!)).map((i) => i.messageId)).toEqual([]);
  // in order: per key, the first 2xx of each message in submit order
  for (let k = 0; k < KEYS; k++) {
    const submitted = inputs.filter((i) => i.orderingKey === keyOf(k)).map((i) => i.messageId!);
    expect(env.receiver.firstAccepted().filter((id) => id.startsWith(`${keyOf(k)}-`))).toEqual(submitted);
  }
  // the faults did happen: each kind at least half its 10 % share of the requests (about 125 of 1,250 expected,
  // σ ≈ 11: a fixed floor of 100 failed once at exactly 100, 2.4σ below; half the share is 6σ below)
  const proof = env.receiver.requests.filter((r) => r.path === '/proof' && r.messageId?.includes(run));
  expect(proof.filter((r) => r.outcome === 'reset').length).toBeGreaterThan(0.05 * proof.length);
  expect(proof.filter((r) => typeof r.outcome === 'number' && r.outcome >= 500).length).toBeGreaterThan(0.05 * proof.length);
}, 900_000);
