import { ApplicationFailure } from '@temporalio/common';
import { InvalidInputError } from '../../src/errors';
import { validateDelivery } from '../../src/validation/delivery';
import { ARRIVAL_CHECK_MS, ARRIVAL_LIMIT_MS, MAX_QUEUED, OrderingQueue, stopsKey } from '../../src/workflows/ordering-state';
import { type OrderingCarried, type OrderingNotice } from '../../src/contract';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `delivery/acme/valve-7/m-${from + i}`);
const notices = (q: OrderingQueue) => Object.fromEntries(q.takeNotices());
const admitted = (q: OrderingQueue) =>
  q
    .takeNotices()
    .filter(([, n]) => n.admit)
    .map(([id]) => id);

/** A key with `n` places, every delivery started (arrived); the notices so far taken. */
function keyWith(n: number): { q: OrderingQueue; d: string[] } {
  const q = new OrderingQueue('acme', 'valve-7');
  const d = ids(n);
  q.enqueue({ deliveryIds: d }, T0);
  for (const id of d) q.arrived(id, T0);
  q.takeNotices();
  return { q, d };
}

test('places are taken in submit order; only the head is admitted, once its delivery has started', () => {
  const q = new OrderingQueue('acme', 'valve-7');
  const d = ids(3);
  const places = q.enqueue({ deliveryIds: d }, T0);
  expect(places.map((p) => [p.position, p.behind, p.existing])).toEqual([
    [0, null, false],
    [1, d[0], false],
    [2, d[1], false],
  ]);
  // nothing is admitted before its delivery has started: a notice could not reach it
  expect(q.takeNotices()).toEqual([]);
  q.arrived(d[2]!, T0);
  q.arrived(d[1]!, T0);
  expect(notices(q)).toEqual({
    [d[2]!]: { admit: false, behind: d[1], blockedBy: null },
    [d[1]!]: { admit: false, behind: d[0], blockedBy: null },
  });
  q.arrived(d[0]!, T0);
  expect(notices(q)).toEqual({ [d[0]!]: { admit: true } });
});

test('each one is admitted when the one before it ends, whatever its outcome but a dead letter', () => {
  const { q, d } = keyWith(4);
  expect(q.status().head).toEqual({ deliveryId: d[0], admitted: true });
  q.left(d[0]!, 'delivered', T0);
  expect(admitted(q)).toEqual([d[1]]);
  q.left(d[1]!, 'dropped', T0); // QoS 0: its producer chose at most once
  expect(admitted(q)).toEqual([d[2]]);
  q.left(d[2]!, 'cancelled', T0);
  expect(admitted(q)).toEqual([d[3]]);
  q.left(d[3]!, 'delivered', T0);
  expect(q.status()).toMatchObject({ state: 'idle', queued: 0, enqueued: 4, passed: 4 });
  expect(q.idle()).toBe(true);
});

test('a dead letter stops the key until released; the dead letter stays, the next one goes', () => {
  for (const outcome of ['rejected', 'expired', 'exhausted'] as const) expect(stopsKey(outcome)).toBe(true);
  const { q, d } = keyWith(3);
  q.left(d[0]!, 'exhausted', T0);
  expect(notices(q)).toEqual({ [d[1]!]: { admit: false, behind: d[0], blockedBy: { deliveryId: d[0], outcome: 'exhausted' } } });
  expect(q.status()).toMatchObject({ state: 'blocked', head: null, queued: 2, blocked: { deliveryId: d[0], outcome: 'exhausted' } });
  expect(() => q.checkRelease(d[1]!)).toThrow(ApplicationFailure);
  q.checkRelease(d[0]!);
  q.release(d[0]!, T0);
  expect(admitted(q)).toEqual([d[1]]);
  expect(q.status()).toMatchObject({ state: 'delivering', blocked: null, queued: 1 });
});

test('a redrive of the dead letter that stopped the key takes the head back; the rest follows it', () => {
  const { q, d } = keyWith(3);
  q.left(d[0]!, 'rejected', T0);
  q.takeNotices();
  const [place] = q.enqueue({ deliveryIds: [d[0]!], redrive: true }, T0);
  expect(place).toMatchObject({ position: 0, existing: false });
  // the one behind it is no longer told the key is stopped
  expect(notices(q)).toEqual({ [d[1]!]: { admit: false, behind: d[0], blockedBy: null } });
  q.arrived(d[0]!, T0);
  expect(admitted(q)).toEqual([d[0]]);
  q.left(d[0]!, 'delivered', T0);
  expect(admitted(q)).toEqual([d[1]]);
});

test('a redrive that never starts gives the block back; a redrive of another dead letter queues at the end', () => {
  const { q, d } = keyWith(2);
  q.left(d[0]!, 'rejected', T0);
  q.enqueue({ deliveryIds: [d[0]!], redrive: true }, T0);
  q.checked(d[0]!, 'closed', T0 + ARRIVAL_CHECK_MS);
  expect(q.status()).toMatchObject({ state: 'blocked', blocked: { deliveryId: d[0] } });
  q.release(d[0]!, T0);
  const [old] = ids(1, 99);
  expect(q.enqueue({ deliveryIds: [old!], redrive: true }, T0)).toEqual([{ deliveryId: old, position: 1, behind: d[1], existing: false }]);
});

test('a queued delivery cancelled leaves the queue; the one behind it now waits for the one before', () => {
  const { q, d } = keyWith(4);
  q.left(d[2]!, 'cancelled', T0);
  expect(notices(q)).toEqual({ [d[3]!]: { admit: false, behind: d[1], blockedBy: null } });
  q.left(d[0]!, 'delivered', T0);
  q.left(d[1]!, 'delivered', T0);
  expect(admitted(q)).toEqual([d[1], d[3]]);
});

test('a resubmit keeps its place; a place given back for an ended delivery goes, one whose delivery started stays', () => {
  const q = new OrderingQueue('acme', 'valve-7');
  const d = ids(3);
  q.enqueue({ deliveryIds: d }, T0);
  q.arrived(d[1]!, T0);
  expect(q.enqueue({ deliveryIds: [d[1]!] }, T0)).toEqual([{ deliveryId: d[1], position: 1, behind: d[0], existing: true }]);
  q.withdraw(d[1]!, T0);
  q.withdraw(d[2]!, T0);
  expect(q.status().queue).toEqual([{ deliveryId: d[1], started: true }]);
  // a head not started yet is withdrawn too: the next one is the head
  q.withdraw(d[0]!, T0);
  expect(q.status()).toMatchObject({ head: { deliveryId: d[1], admitted: true }, queued: 0 });
});

test('a head that does not start is looked up, waited for while it (or its batch) may still come, dropped when it never will', () => {
  const q = new OrderingQueue('acme', 'valve-7');
  const d = ids(2);
  q.enqueue({ deliveryIds: d, via: 'batch/acme/b-1' }, T0);
  q.arrived(d[1]!, T0);
  expect(q.arrivalCheck(T0)).toEqual({ deliveryId: d[0], via: 'batch/acme/b-1', inMs: ARRIVAL_CHECK_MS });
  q.checked(d[0]!, 'starting', T0 + ARRIVAL_CHECK_MS);
  q.checked(d[0]!, 'missing', T0 + ARRIVAL_LIMIT_MS - 1);
  expect(q.status().head?.deliveryId).toBe(d[0]);
  q.checked(d[0]!, 'missing', T0 + ARRIVAL_LIMIT_MS);
  expect(admitted(q)).toEqual([d[1]]);
  // dropped, it starts after all: it takes a place at the end rather than wait forever
  expect(q.arrived(d[0]!, T0 + ARRIVAL_LIMIT_MS)).toBe(false);
  expect(q.status().queue).toEqual([{ deliveryId: d[0], started: true }]);
});

test('a notice that cannot reach its delivery means it ended without a word: its place goes', () => {
  const { q, d } = keyWith(2);
  q.gone(d[0]!, T0);
  expect(admitted(q)).toEqual([d[1]]);
});

test('a key holds at most MAX_QUEUED places: more is refused, nothing changes', () => {
  const q = new OrderingQueue('acme', 'valve-7');
  q.enqueue({ deliveryIds: ids(MAX_QUEUED + 1) }, T0);
  expect(q.status(0).queued).toBe(MAX_QUEUED);
  expect(() => q.checkEnqueue([{ deliveryIds: ids(1, MAX_QUEUED + 1) }], T0)).toThrow(/holds at most 10000/);
  // places held already are not counted again
  q.checkEnqueue([{ deliveryIds: ids(5) }], T0);
});

test('100,000 messages through one key: admitted in submit order, and what a run carries over stays small', () => {
  let q = new OrderingQueue('acme', 'valve-7');
  const order: string[] = [];
  let largest = 0;
  for (let n = 0; n < 100_000; n += 100) {
    const d = ids(100, n);
    q.enqueue({ deliveryIds: d }, T0);
    for (const id of d) q.arrived(id, T0);
    for (const id of d) {
      order.push(...admitted(q));
      q.left(id, 'delivered', T0);
    }
    order.push(...admitted(q));
    // continue-as-new every 1,000 messages, as the sequencer does when its history is long
    if (n % 1_000 === 900) {
      const carried: OrderingCarried = JSON.parse(JSON.stringify(q.carried()));
      largest = Math.max(largest, JSON.stringify(carried).length);
      q = new OrderingQueue('acme', 'valve-7', carried);
    }
  }
  expect(order).toEqual(ids(100_000));
  expect(q.status()).toMatchObject({ state: 'idle', enqueued: 100_000, passed: 100_000, run: 101 });
  expect(largest).toBeLessThan(1_000);
});

test('orderingKey is validated like a tenant, and kept only when given (older deliveries keep their fingerprint)', () => {
  const input = { kind: 'event', tenant: 'acme', device: 'valve-7', target: 'https://example.com/in', payload: {} };
  expect(validateDelivery({ ...input, orderingKey: 'valve-7' }).orderingKey).toBe('valve-7');
  expect('orderingKey' in validateDelivery(input)).toBe(false);
  for (const bad of ['', 'a/b', 'a b', 'x'.repeat(129), 7]) {
    try {
      validateDelivery({ ...input, orderingKey: bad });
      throw new Error(`accepted ${JSON.stringify(bad)}`);
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidInputError);
      expect(new Set((err as InvalidInputError).problems.map((p) => p.field))).toEqual(new Set(['orderingKey']));
    }
  }
});

// a type check: notices are one of two shapes
const _shapes: OrderingNotice[] = [{ admit: true }, { admit: false, behind: null, blockedBy: null }];
