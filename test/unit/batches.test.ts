import { MAX_BATCH_BYTES, MAX_BATCH_MESSAGES, batchBounds, checkBatchId, planBatches, planSubmission } from '../../src/batching/batches';
import type { Delivery } from '../../src/delivery/types';
import { InvalidInputError } from '../../src/errors';
import { storedBytes } from '../../src/validation/limits';
import { validateDelivery } from '../../src/validation/delivery';

// How a set of messages is cut into batches before anything starts (src/batching/batches.ts, docs/batches.md)

const NOW = Date.parse('2026-11-23T10:00:00Z');
const message = (n: number, extra: Record<string, unknown> = {}): Delivery =>
  validateDelivery(
    {
      kind: 'telemetry',
      tenant: 'acme',
      device: `d${n % 7}`,
      messageId: `m-${n}`,
      target: 'https://ingest.example.com/t',
      payload: { n },
      ...extra,
    },
    { now: NOW },
  );
const messages = (count: number, extra: Record<string, unknown> = {}) => Array.from({ length: count }, (_, n) => message(n, extra));
const ids = (deliveries: readonly Delivery[]) => deliveries.map((d) => d.messageId);
const BOUNDS = { maxMessages: 500, maxBytes: MAX_BATCH_BYTES };

function refusal(fn: () => unknown): Record<string, string> {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidInputError) return Object.fromEntries(err.problems.map((p) => [p.field, p.message]));
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('planBatches', () => {
  test('one batch per tenant, each message once and in the order given', () => {
    const set = [message(1), message(2, { tenant: 'globex' }), message(3), message(4, { tenant: 'globex' })];
    const batches = planBatches(set, BOUNDS);
    expect(batches.map((b) => [b.tenant, ids(b.deliveries)])).toEqual([
      ['acme', ['m-1', 'm-3']],
      ['globex', ['m-2', 'm-4']],
    ]);
  });

  test('cut by maxMessages: 1,200 messages at 500 are 500, 500 and 200', () => {
    const batches = planBatches(messages(1_200), BOUNDS);
    expect(batches.map((b) => b.deliveries.length)).toEqual([500, 500, 200]);
    expect(batches.flatMap((b) => ids(b.deliveries))).toEqual(ids(messages(1_200)));
  });

  test('cut by maxBytes: no batch holds more than maxBytes of deliveries as stored; a message bigger than that goes alone', () => {
    const set = messages(40, { payload: 'x'.repeat(1_000) });
    const maxBytes = 3 * (storedBytes(set[0]) + 1);
    const batches = planBatches(set, { maxMessages: 500, maxBytes });
    const bytes = (list: Delivery[]) => list.reduce((sum, d) => sum + storedBytes(d) + 1, 0);
    expect(batches.flatMap((b) => ids(b.deliveries))).toEqual(ids(set));
    for (const [i, b] of batches.entries()) {
      expect(bytes(b.deliveries)).toBeLessThanOrEqual(maxBytes);
      // each batch is as full as the bound allows: the next message would not have fitted
      if (i < batches.length - 1) expect(bytes([...b.deliveries, batches[i + 1]!.deliveries[0]!])).toBeGreaterThan(maxBytes);
    }
    expect(batches.length).toBeGreaterThanOrEqual(14);

    const big = message(99, { payload: 'y'.repeat(5_000) });
    const alone = planBatches([message(1), big, message(2)], { maxMessages: 500, maxBytes: 2_000 });
    expect(alone.map((b) => ids(b.deliveries))).toEqual([['m-1'], ['m-99'], ['m-2']]);
  });

  test('a file of 20,000 messages of one tenant is planned: 40 batches of 500, every message once, in order', () => {
    // the deliveries of one validated message, told apart by id: validating 20,000 is not what is tested here
    const one = message(0);
    const set = Array.from({ length: 20_000 }, (_, n) => ({ ...one, messageId: `m-${n}`, deliveryId: `delivery/acme/d0/m-${n}` }));
    const batches = planBatches(set, BOUNDS);
    expect(batches).toHaveLength(40);
    expect(batches.every((b) => b.deliveries.length === 500)).toBe(true);
    expect(batches.flatMap((b) => ids(b.deliveries))).toEqual(ids(set));
  });

  test('batch ids: the one given, with -1, -2, … when a tenant takes several; else a hash of the contents', () => {
    expect(planBatches(messages(3), BOUNDS, 'upload-7').map((b) => b.batchId)).toEqual(['upload-7']);
    expect(planBatches(messages(1_001), BOUNDS, 'upload-7').map((b) => b.batchId)).toEqual(['upload-7-1', 'upload-7-2', 'upload-7-3']);
    // per tenant: the workflow ids, batch/<tenant>/<batchId>, still differ
    const twoTenants = planBatches([message(1), message(2, { tenant: 'globex' })], BOUNDS, 'upload-7');
    expect(twoTenants.map((b) => `${b.tenant}/${b.batchId}`)).toEqual(['acme/upload-7', 'globex/upload-7']);

    const [hashed] = planBatches(messages(3), BOUNDS);
    expect(hashed!.batchId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(() => checkBatchId(hashed!.batchId)).not.toThrow();
  });

  test('a hashed id is the same for the same messages submitted later, and differs when any message does', () => {
    const later = messages(3).map((d) => ({ ...d, submittedAt: NOW + 60_000 }));
    const id = (set: Delivery[]) => planBatches(set, BOUNDS)[0]!.batchId;
    expect(id(later)).toBe(id(messages(3)));
    expect(id([message(0), message(1), message(2, { payload: { n: 'changed' } })])).not.toBe(id(messages(3)));
    expect(id([message(0), message(1), message(2, { target: 'https://other.example.com/t' })])).not.toBe(id(messages(3)));
  });

  test('a message repeated in the set: sent once when identical; refused naming [i].messageId when it differs', () => {
    const [batch] = planBatches([message(1), message(2), message(1), message(1)], BOUNDS);
    expect(ids(batch!.deliveries)).toEqual(['m-1', 'm-2']);

    const problems = refusal(() =>
      planBatches([message(1), message(2), message(1, { payload: 'another' }), message(2, { kind: 'event' })], BOUNDS),
    );
    expect(Object.keys(problems)).toEqual(['[2].messageId', '[3].messageId']);
    expect(problems['[2].messageId']).toMatch(/m-1 is used earlier in the batch for a different message or target/);
  });

  test('the same message id from another device is another message', () => {
    const [batch] = planBatches([message(1), message(1, { device: 'elsewhere' })], BOUNDS);
    expect(batch!.deliveries.map((d) => d.deliveryId)).toEqual(['delivery/acme/d1/m-1', 'delivery/acme/elsewhere/m-1']);
  });
});

describe('batchBounds and checkBatchId', () => {
  test('defaults: 500 messages and 1 MiB', () => {
    expect(batchBounds({})).toEqual({ maxMessages: 500, maxBytes: 1024 * 1024 });
    expect(batchBounds({ maxMessages: MAX_BATCH_MESSAGES, maxBytes: 1 })).toEqual({ maxMessages: 1_000, maxBytes: 1 });
  });

  test.each([0, -1, 1.5, MAX_BATCH_MESSAGES + 1, Number.NaN, '10'])('maxMessages %p is refused, named', (maxMessages) => {
    expect(refusal(() => batchBounds({ maxMessages: maxMessages as number }))).toEqual({
      maxMessages: 'must be an integer from 1 to 1000',
    });
  });

  test('every wrong bound at once, under the prefix given', () => {
    expect(refusal(() => batchBounds({ maxMessages: 0, maxBytes: MAX_BATCH_BYTES + 1 }, 'batch.'))).toEqual({
      'batch.maxMessages': 'must be an integer from 1 to 1000',
      'batch.maxBytes': `must be an integer from 1 to ${MAX_BATCH_BYTES}`,
    });
  });

  test('a batch id is an id: no "/", no whitespace, at most 128 characters', () => {
    expect(() => checkBatchId(undefined)).not.toThrow();
    expect(() => checkBatchId('upload-2026-11-23T10:00')).not.toThrow();
    expect(refusal(() => checkBatchId('a/b'))).toEqual({ batchId: 'must not contain whitespace, "/", "+" or "#"' });
    expect(Object.keys(refusal(() => checkBatchId('x'.repeat(129))))).toEqual(['batchId']);
    expect(Object.keys(refusal(() => checkBatchId('')))).toEqual(['batchId']);
  });
});

describe('messages without ids, in a set', () => {
  const unnamed = (n: number) => ({
    kind: 'event',
    tenant: 'acme',
    device: 'd1',
    target: 'https://ingest.example.com/t',
    payload: { n },
  });
  const plan = (inputs: unknown[], now: number) => planSubmission(inputs, {}, { now });

  test('get their ids from their contents: the same set planned again, later, is the same messages in the same batches', () => {
    const inputs = Array.from({ length: 30 }, (_, n) => unnamed(n));
    const [first, again] = [plan(inputs, NOW), plan(inputs, NOW + 60_000)];
    expect(again.map((b) => b.batchId)).toEqual(first.map((b) => b.batchId));
    expect(ids(again[0]!.deliveries)).toEqual(ids(first[0]!.deliveries));
    expect(new Set(ids(first[0]!.deliveries)).size).toBe(30);
    expect(first[0]!.deliveries[0]!.messageId).toMatch(/^content-[\w-]{32}$/);
  });

  test('identical messages are one; anything that changes what is sent or how makes another', () => {
    const [same] = plan([unnamed(1), unnamed(1)], NOW);
    expect(same!.deliveries).toHaveLength(1);
    const variants = [
      unnamed(1),
      { ...unnamed(1), device: 'd2' },
      { ...unnamed(1), target: 'https://ingest.example.com/u' },
      { ...unnamed(1), policy: { maxAge: '1h' } },
    ];
    expect(new Set(plan(variants, NOW).flatMap((b) => ids(b.deliveries))).size).toBe(4);
  });

  test('a single message without an id still gets a new UUID each time', () => {
    const [a, b] = [validateDelivery(unnamed(1), { now: NOW }), validateDelivery(unnamed(1), { now: NOW })];
    expect(a.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.messageId).not.toBe(b.messageId);
  });
});
