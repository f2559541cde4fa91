import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { BATCH_ENDPOINT_CONCURRENCY, createBatchActivities, type BatchDeps } from '../../src/activities/batch';
import type { AttemptResult } from '../../src/activities/deliver';
import type { BatchResult } from '../../src/contract';
import { SendLanes } from '../../src/worker-services/send-lanes';
import type { Delivery } from '../../src/delivery/types';
import { validateDelivery } from '../../src/validation/delivery';

// The worker's lanes for batches' first attempts: one endpoint's bound holds across every batch the worker runs

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never;
const delivered: AttemptResult = { ok: true, code: 'http-202', reason: 'HTTP 202', durationMs: 1 } as AttemptResult;

/** Counts what is in flight by key, and lets the test end each piece of work when it chooses. */
function gate() {
  const inFlight = new Map<string, number>();
  const peak = new Map<string, number>();
  const held: (() => void)[] = [];
  const enter = (key: string) => {
    const now = (inFlight.get(key) ?? 0) + 1;
    inFlight.set(key, now);
    peak.set(key, Math.max(peak.get(key) ?? 0, now));
    return new Promise<void>((resolve) => held.push(resolve)).then(() => void inFlight.set(key, inFlight.get(key)! - 1));
  };
  const releaseAll = async () => {
    // until nothing is left held: each release lets a waiter in, which is held in its turn
    while (held.length) {
      held.splice(0).forEach((go) => go());
      await new Promise((r) => setImmediate(r));
    }
  };
  return { enter, peak, releaseAll, held: () => held.length };
}

test('two batches to one endpoint on one worker share its lanes: never more than BATCH_ENDPOINT_CONCURRENCY at once', async () => {
  const g = gate();
  const deps: BatchDeps = {
    attempt: async (delivery) => {
      await g.enter(delivery.endpoint);
      return delivered;
    },
    attemptRequest: (() => Promise.reject(new Error('no batched endpoint here'))) as unknown as BatchDeps['attemptRequest'],
    client: null as unknown as Client,
  };
  const { firstAttempts } = createBatchActivities(deps);
  const batch = (b: number): Delivery[] =>
    Array.from({ length: 40 }, (_, n) =>
      validateDelivery({
        kind: 'event',
        tenant: 'acme',
        device: 'd',
        messageId: `b${b}-${n}`,
        target: 'https://example.com/x',
        payload: { n },
      }),
    );
  const runs = [1, 2].map((b) =>
    new MockActivityEnvironment(undefined, { logger: quiet }).run(firstAttempts, {
      batchId: `b-${b}`,
      tenant: 'acme',
      deliveries: batch(b),
    }),
  );
  // both batches are under way and every lane is taken
  for (let i = 0; i < 20 && g.held() < BATCH_ENDPOINT_CONCURRENCY; i++) await new Promise((r) => setImmediate(r));
  expect(g.held()).toBe(BATCH_ENDPOINT_CONCURRENCY);
  await g.releaseAll();
  const results = (await Promise.all(runs)) as BatchResult[];
  expect(results.map((r) => r.delivered)).toEqual([40, 40]);
  expect(Object.fromEntries(g.peak)).toEqual({ [batch(1)[0]!.endpoint]: BATCH_ENDPOINT_CONCURRENCY });
});

test('lanes: at most perKey to one key and total in all; a freed lane goes to the first waiter that can use it', async () => {
  const lanes = new SendLanes(2, 3);
  const order: string[] = [];
  const g = gate();
  const work = (key: string, name: string) =>
    lanes.run(key, async () => {
      order.push(name);
      await g.enter(key);
    });
  const all = [work('a', 'a1'), work('a', 'a2'), work('a', 'a3'), work('b', 'b1'), work('b', 'b2')];
  await new Promise((r) => setImmediate(r));
  // a3 waits for a's bound, b2 for the total
  expect(order).toEqual(['a1', 'a2', 'b1']);
  expect(lanes.stats()).toEqual({ inFlight: 3, waiting: 2 });
  await g.releaseAll();
  await Promise.all(all);
  expect(order).toEqual(['a1', 'a2', 'b1', 'a3', 'b2']);
  expect(Object.fromEntries(g.peak)).toEqual({ a: 2, b: 1 });
  expect(lanes.stats()).toEqual({ inFlight: 0, waiting: 0 });
});

test('lanes: a lane freed and a new arrival in the same turn: the waiter woken keeps the lane it was given', async () => {
  const lanes = new SendLanes(1, 1);
  const g = gate();
  const first = lanes.run('a', () => g.enter('a'));
  const second = lanes.run('a', () => g.enter('a'));
  await new Promise((r) => setImmediate(r));
  await g.releaseAll(); // first ends, second is woken with the lane ...
  const third = lanes.run('a', () => g.enter('a')); // ... and this one, arriving before second runs, waits
  await g.releaseAll();
  await Promise.all([first, second, third]);
  expect(g.peak.get('a')).toBe(1);
});

test('lanes: thousands waiting on one endpoint and a few on another each go in arrival order, within the bounds', async () => {
  const lanes = new SendLanes(4, 6);
  const started: string[] = [];
  let inFlight = 0;
  let peak = 0;
  const work = (key: string, name: string) =>
    lanes.run(key, async () => {
      started.push(name);
      peak = Math.max(peak, ++inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
    });
  const names = Array.from({ length: 5000 }, (_, i) => (i % 1000 === 999 ? `b${i}` : `a${i}`));
  await Promise.all(names.map((name) => work(name[0]!, name)));
  expect(peak).toBeLessThanOrEqual(6);
  // each endpoint's sends started in the order they came
  for (const key of ['a', 'b']) {
    const own = names.filter((n) => n[0] === key);
    expect(started.filter((n) => n[0] === key)).toEqual(own);
  }
  expect(lanes.stats()).toEqual({ inFlight: 0, waiting: 0 });
});
