import { BatchSubmission, type BatchHandle } from '../../src/batching/batches';
import { heldStatus, type FoundHeld } from '../../src/client/holds';
import type { BatchResult, HeldEnd, MessageResult } from '../../src/contract';
import { runningHoldsQuery } from '../../src/delivery/filter';
import type { DeliveryResult } from '../../src/delivery/types';

// A message of a batch waiting in an outage hold, as a user sees it by its id (docs/endpoint-health.md, "Outages")

const ID = 'delivery/acme/sensor-1/m-1';
const HOLD = 'hold/acme/ingest.example.com/1';
const T0 = Date.parse('2026-11-23T10:00:00Z');
const lastError = {
  class: 'server' as const,
  code: 'http-503',
  reason: 'Service Unavailable',
  attempt: 2,
  at: new Date(T0 + 5_000).toISOString(),
};

const waiting: FoundHeld = {
  deliveryId: ID,
  holdId: HOLD,
  endpoint: 'ingest.example.com',
  view: {
    holdId: HOLD,
    message: {
      deliveryId: ID,
      messageId: 'm-1',
      kind: 'telemetry',
      qos: 1,
      batch: 'batch/acme/b1',
      heldAt: T0 + 1_000,
      attempts: 2,
      firstAttemptAt: T0,
      lastAttemptAt: T0 + 5_000,
      lastError,
      attemptLog: [
        { attempt: 1, startedAt: new Date(T0).toISOString(), durationMs: 12, code: 'http-503', ok: false },
        { attempt: 2, startedAt: new Date(T0 + 5_000).toISOString(), durationMs: 9, code: 'http-503', ok: false },
      ],
    },
    left: null,
    summary: `waiting in ${HOLD} for ingest.example.com to answer again (attempt 2: http-503)`,
  },
};
const END = { kind: 'telemetry', qos: 1 } as const;

describe("a held message's status", () => {
  test('waiting in its hold, with the attempts it made, and no planned next attempt', () => {
    expect(heldStatus(waiting)).toEqual({
      deliveryId: ID,
      messageId: 'm-1',
      kind: 'telemetry',
      qos: 1,
      tenant: 'acme',
      device: 'sensor-1',
      endpoint: 'ingest.example.com',
      state: 'waiting',
      attempts: 2,
      firstAttemptAt: '2026-11-23T10:00:00.000Z',
      lastAttemptAt: '2026-11-23T10:00:05.000Z',
      nextAttemptAt: null,
      lastError,
      attemptLog: waiting.view.message!.attemptLog,
      summary: `waiting in ${HOLD} for ingest.example.com to answer again (attempt 2: http-503)`,
      pause: null,
      hold: { holdId: HOLD },
    });
  });

  test('delivered from its hold: the attempt that did it', () => {
    const left = { left: 'delivered', attempts: 3, code: 'http-202', at: T0 + 70_000, ...END } as const;
    // once it left, the hold keeps how, not the message
    const status = heldStatus({ ...waiting, view: { ...waiting.view, message: null, left } });
    expect(status).toMatchObject({
      deliveryId: ID,
      messageId: 'm-1',
      kind: 'telemetry',
      state: 'delivered',
      attempts: 3,
      lastAttemptAt: '2026-11-23T10:01:10.000Z',
      nextAttemptAt: null,
      hold: { holdId: HOLD },
    });
    expect(status.summary).toBe(`delivered from ${HOLD} at attempt 3 (http-202)`);
  });
});

test("a tenant's running holds are found by a query that keeps the tenant a string", () => {
  expect(runningHoldsQuery("it's")).toBe(`WorkflowType = 'holdWorkflow' AND ExecutionStatus = 'Running' AND Tenant = 'it\\'s'`);
});

describe("a batch's outcomes with held messages", () => {
  const row = (n: number, disposition: MessageResult['disposition'], extra: Partial<MessageResult> = {}): MessageResult => ({
    messageId: `m-${n}`,
    deliveryId: `delivery/acme/d/m-${n}`,
    disposition,
    code: disposition === 'delivered' ? 'http-202' : 'http-503',
    at: new Date(T0).toISOString(),
    ...extra,
  });
  const rows = [row(1, 'delivered'), row(2, 'held', { hold: HOLD }), row(3, 'held', { hold: HOLD }), row(4, 'handed-over')];
  const batch = { result: async () => ({ results: rows }) as unknown as BatchResult } as BatchHandle;
  const ends: Record<string, HeldEnd> = {
    'delivery/acme/d/m-2': { left: 'delivered', attempts: 4, code: 'http-202', at: T0, ...END },
    'delivery/acme/d/m-3': { left: 'handed-over', attempts: 6, code: 'http-400', at: T0, ...END },
  };
  const results: Record<string, Partial<DeliveryResult>> = {
    'delivery/acme/d/m-3': { outcome: 'rejected', attempts: 6, lastError: { ...lastError, code: 'http-400' } },
    'delivery/acme/d/m-4': { outcome: 'delivered', attempts: 2, lastError },
  };

  test('delivered in the hold counts as delivered; handed over, its delivery says', async () => {
    const asked: string[] = [];
    const submission = new BatchSubmission(
      [batch],
      rows.map((r) => r.deliveryId),
      async (id) => results[id] as DeliveryResult,
      async (holdId, id) => (asked.push(`${holdId} ${id}`), ends[id]!),
    );
    expect((await submission.outcomes()).map((o) => [o.messageId, o.outcome, o.attempts, o.code])).toEqual([
      ['m-1', 'delivered', 1, 'http-202'],
      ['m-2', 'delivered', 4, 'http-202'],
      ['m-3', 'rejected', 6, 'http-400'],
      ['m-4', 'delivered', 2, 'http-503'],
    ]);
    expect(asked).toEqual([`${HOLD} delivery/acme/d/m-2`, `${HOLD} delivery/acme/d/m-3`]);
  });
});
