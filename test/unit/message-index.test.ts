import { encodeUnifiedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes';
import { planBatches } from '../../src/batching/batches';
import {
  batchesHoldingQuery,
  completedBatchesQuery,
  indexAttributes,
  KEYS_PER_ATTRIBUTE,
  MAX_INDEXED_MESSAGES,
  messageKey,
} from '../../src/batching/message-index';
import { validateDelivery } from '../../src/validation/delivery';

const ids = (n: number, prefix = 'm') => Array.from({ length: n }, (_, i) => `delivery/acme/dev-1/${prefix}-${i}`);

test('a key is 8 characters of lower-case base32, the same for the same id, different for others', () => {
  const keys = ids(2_000).map(messageKey);
  for (const key of keys) expect(key).toMatch(/^[a-z2-7]{8}$/);
  expect(messageKey('delivery/acme/dev-1/m-0')).toBe(keys[0]);
  // 40 bits: no two of two thousand alike
  expect(new Set(keys).size).toBe(keys.length);
});

test('a full batch fits: each attribute, as Temporal stores it, within its 2,048 bytes; one more message is refused', () => {
  const pairs = indexAttributes(ids(MAX_INDEXED_MESSAGES));
  expect(MAX_INDEXED_MESSAGES).toBe(558);
  expect(pairs.map((p) => p.key.name)).toEqual(['BatchMessages1', 'BatchMessages2', 'BatchMessages3']);
  for (const pair of pairs) expect(pair.value).toHaveLength(KEYS_PER_ATTRIBUTE);
  // the SDK encodes a keyword list as one JSON payload: its data is what the server's size check counts
  const encoded = Object.values(encodeUnifiedSearchAttributes(undefined, pairs));
  expect(encoded).toHaveLength(3);
  for (const payload of encoded) expect(payload.data!.length).toBeLessThanOrEqual(2_048);
  expect(Math.max(...encoded.map((p) => p.data!.length))).toBeGreaterThan(2_048 - 11);
  expect(() => indexAttributes(ids(MAX_INDEXED_MESSAGES + 1))).toThrow(/at most 558/);
  // a small batch takes the first attribute only
  expect(indexAttributes(ids(3)).map((p) => p.key.name)).toEqual(['BatchMessages1']);
});

test('batches are cut at the index bound, whatever larger maxMessages is asked', () => {
  const deliveries = ids(1_000, 'x').map((id) =>
    validateDelivery({
      kind: 'event',
      tenant: 'acme',
      device: 'dev-1',
      messageId: id.split('/')[3],
      target: 'http://127.0.0.1:9/in',
      payload: {},
    }),
  );
  const batches = planBatches(deliveries, { maxMessages: 1_000, maxBytes: 1024 * 1024 }, 'upload');
  expect(batches.map((b) => b.deliveries.length)).toEqual([558, 442]);
  expect(batches.map((b) => b.batchId)).toEqual(['upload-1', 'upload-2']);
});

test('the query finds the batches of the tenant whose index holds the key, in any of the three lists', () => {
  const query = batchesHoldingQuery("o'brien", "delivery/o'brien/d/m-1");
  const key = messageKey("delivery/o'brien/d/m-1");
  expect(query).toBe(
    `WorkflowType = 'batchWorkflow' AND Tenant = 'o\\'brien' AND (BatchMessages1 = '${key}' OR BatchMessages2 = '${key}' OR BatchMessages3 = '${key}')`,
  );
});

test("a listing's batches: completed, of its tenants, and with a time window those whose life overlaps it", () => {
  const since = new Date('2026-12-01T10:00:00Z');
  const until = new Date('2026-12-01T11:00:00Z');
  expect(completedBatchesQuery('q', { tenant: ['acme', "o'brien"], since, until })).toBe(
    "WorkflowType = 'batchWorkflow' AND TaskQueue = 'q' AND ExecutionStatus = 'Completed' AND Tenant IN ('acme', 'o\\'brien')" +
      " AND CloseTime >= '2026-12-01T10:00:00.000Z' AND StartTime <= '2026-12-01T11:00:00.000Z'",
  );
  expect(completedBatchesQuery('q')).toBe("WorkflowType = 'batchWorkflow' AND TaskQueue = 'q' AND ExecutionStatus = 'Completed'");
});
