import type { ActivityClient, WorkflowClient } from '@temporalio/client';
import { mergedListing } from '../../src/client/batched-lists';
import type { DeliverySummary } from '../../src/client/lists';
import type { BatchResult, MessageResult } from '../../src/contract';
import type { DeliveryFilter } from '../../src/delivery/filter';

// the merge of a listing (docs/batches.md, "Finding a message by its id"): batches list by close time, their rows
// lie within their lives; the lines come out newest first whatever batch they are in, each once
const t = (s: number) => new Date(Date.UTC(2026, 11, 1, 12, 0, s)).toISOString();
const row = (device: string, n: number, s: number, disposition: MessageResult['disposition'] = 'delivered'): MessageResult => ({
  messageId: `m${n}`,
  deliveryId: `delivery/acme/${device}/m${n}`,
  disposition,
  code: disposition === 'delivered' ? 'http-202' : 'http-400',
  at: t(s),
  kind: 'event',
  qos: 1,
  endpoint: 'ingest.example.com',
});

/** Batches as visibility lists them (closed last first) and as their results read; how many results were read. */
function fakeClient(batches: { id: string; closedAt: number; rows: MessageResult[] }[]) {
  const read: string[] = [];
  const client = {
    list: () =>
      (async function* () {
        for (const b of [...batches].sort((x, y) => y.closedAt - x.closedAt))
          yield { workflowId: `batch/acme/${b.id}`, runId: 'r', closeTime: new Date(t(b.closedAt)), status: { name: 'COMPLETED' } };
      })(),
    getHandle: (workflowId: string) => ({
      // a running hold: one message waits in it, another was delivered from it, a third handed over
      describe: () => Promise.resolve({ status: { name: 'RUNNING' }, typedSearchAttributes: { get: () => 'ingest.example.com' } }),
      query: (_q: unknown, deliveryId: string) => Promise.resolve(heldView(workflowId, deliveryId)),
      result: () => {
        read.push(workflowId);
        const b = batches.find((x) => `batch/acme/${x.id}` === workflowId)!;
        return Promise.resolve({
          batchId: b.id,
          tenant: 'acme',
          messages: b.rows.length,
          delivered: 0,
          handedOver: 0,
          results: b.rows,
        } as BatchResult);
      },
    }),
  } as unknown as WorkflowClient;
  return { client, read };
}

function heldView(holdId: string, deliveryId: string) {
  const n = deliveryId.split('/').at(-1);
  const base = { holdId, summary: `in ${holdId}` };
  if (n === 'm7') return { ...base, message: { attempts: 2, lastError: { class: 'server' }, kind: 'event', qos: 1 }, left: null };
  if (n === 'm8') return { ...base, message: null, left: { left: 'delivered', attempts: 3, code: 'http-202', at: Date.parse(t(40)) } };
  return { ...base, message: null, left: { left: 'handed-over', attempts: 3, code: 'http-503', at: Date.parse(t(40)) } };
}

/** Single submits' first attempts (standalone activities) as visibility lists them (closed last first) and as they describe. */
function fakeActivities(firsts: { device: string; n: number; closedAt: number; row: MessageResult | 'cancelled' }[]) {
  const idOf = (f: (typeof firsts)[number]) => `delivery/acme/${f.device}/m${f.n}`;
  return {
    list: () =>
      (async function* () {
        for (const f of [...firsts].sort((x, y) => y.closedAt - x.closedAt))
          yield { activityId: idOf(f), closeTime: new Date(t(f.closedAt)), scheduleTime: new Date(t(f.closedAt - 1)) };
      })(),
    getHandle: (id: string) => ({
      describe: () => {
        const f = firsts.find((x) => idOf(x) === id)!;
        const result = f.row === 'cancelled' ? undefined : { results: [f.row] };
        return Promise.resolve({
          status: f.row === 'cancelled' ? 'CANCELED' : 'COMPLETED',
          getResult: () => Promise.resolve(result),
          getInput: () => Promise.resolve([{ deliveries: [{ kind: 'event', qos: 1, endpoint: 'ingest.example.com' }] }]),
          getHeartbeatDetails: () => Promise.resolve(undefined),
          typedSearchAttributes: { get: () => undefined },
        });
      },
    }),
  } as unknown as ActivityClient;
}

const NO_FIRST_ATTEMPTS = fakeActivities([]);

const own = (id: string, s: number | null): DeliverySummary => ({
  deliveryId: id,
  runId: 'run',
  state: s === null ? 'waiting' : 'rejected',
  kind: 'event',
  tenant: 'acme',
  device: 'd1',
  endpoint: 'ingest.example.com',
  attempts: 1,
  lastErrorClass: 'client',
  startedAt: t(0),
  closedAt: s === null ? null : t(s),
});

async function lines(
  client: WorkflowClient,
  filter: DeliveryFilter,
  deliveries: DeliverySummary[] = [],
  take = Infinity,
  activities = NO_FIRST_ATTEMPTS,
) {
  const out: string[] = [];
  for await (const line of mergedListing(
    client,
    'q',
    filter,
    (async function* () {
      yield* deliveries;
    })(),
    activities,
  )) {
    out.push(line.deliveryId.split('/').at(-1)!);
    if (out.length >= take) break;
  }
  return out;
}

test('newest first across batches whose lives overlap, merged with the deliveries of their own (running ones first)', async () => {
  // batch a ran from 0 to 30 s, b from 10 to 20 s: b closed first but a has rows older and newer than b's
  const { client } = fakeClient([
    { id: 'a', closedAt: 30, rows: [row('d1', 1, 1), row('d1', 2, 29), row('d1', 9, 5, 'handed-over')] },
    { id: 'b', closedAt: 20, rows: [row('d1', 3, 11), row('d1', 4, 19)] },
  ]);
  const deliveries = [own('delivery/acme/d1/w', null), own('delivery/acme/d1/m9', 25), own('delivery/acme/d1/x', 2)];
  // the handed-over row is its own delivery's line (m9), not the batch's
  expect(await lines(client, {}, deliveries)).toEqual(['w', 'm2', 'm9', 'm4', 'm3', 'x', 'm1']);
});

test('filters: state, device and the time window; a state only deliveries can be in reads no batch', async () => {
  const { client, read } = fakeClient([
    { id: 'a', closedAt: 30, rows: [row('d1', 1, 1), row('d2', 2, 29), row('d1', 3, 15)] },
    { id: 'b', closedAt: 10, rows: [row('d1', 4, 9)] },
  ]);
  expect(await lines(client, { device: 'd1' })).toEqual(['m3', 'm4', 'm1']);
  expect(await lines(client, { state: 'delivered', since: new Date(t(10)) })).toEqual(['m2', 'm3']);
  expect(await lines(client, { until: new Date(t(10)) })).toEqual(['m4', 'm1']);
  read.length = 0;
  expect(await lines(client, { state: ['rejected', 'expired'] })).toEqual([]);
  expect(read).toEqual([]);
});

test('a listing that has enough lines stops reading batches', async () => {
  const { client, read } = fakeClient(
    Array.from({ length: 10 }, (_, i) => ({ id: `b${i}`, closedAt: 100 - i * 5, rows: [row('d1', i, 100 - i * 5 - 1)] })),
  );
  expect(await lines(client, {}, [], 2)).toEqual(['m0', 'm1']);
  // the third batch is read to know the second's row is newer than anything after it
  expect(read.length).toBeLessThanOrEqual(3);
});

test('held rows: waiting in their hold, or delivered from it; one handed over is its own delivery; an error class reads only what waits', async () => {
  const held = (n: number, s: number): MessageResult => ({ ...row('d1', n, s, 'held'), hold: 'hold/acme/h1' });
  const { client, read } = fakeClient([{ id: 'a', closedAt: 30, rows: [held(7, 10), held(8, 11), held(9, 12), row('d1', 1, 5)] }]);
  const all: DeliverySummary[] = [];
  for await (const line of mergedListing(client, 'q', {}, (async function* () {})(), NO_FIRST_ATTEMPTS)) all.push(line);
  expect(all.map((l) => [l.deliveryId.split('/').at(-1), l.state, l.attempts, l.hold?.holdId])).toEqual([
    ['m8', 'delivered', 3, 'hold/acme/h1'],
    ['m7', 'waiting', 2, 'hold/acme/h1'],
    ['m1', 'delivered', 1, undefined],
  ]);
  expect(all.find((l) => l.deliveryId.endsWith('/m7'))).toMatchObject({ closedAt: null, lastErrorClass: 'server' });
  expect(await lines(client, { state: 'waiting', errorClass: 'server' })).toEqual(['m7']);
  read.length = 0;
  expect(await lines(client, { state: 'delivered', errorClass: 'server' })).toEqual([]);
  expect(read).toEqual([]);
});

test('single submits’ first attempts: delivered at once and cancelled ones listed among the rest, a handed-over one as its own delivery', async () => {
  const { client } = fakeClient([{ id: 'a', closedAt: 30, rows: [row('d1', 1, 10), row('d1', 2, 29)] }]);
  const activities = fakeActivities([
    { device: 'd1', n: 5, closedAt: 20, row: row('d1', 5, 20) },
    { device: 'd2', n: 6, closedAt: 35, row: row('d2', 6, 35) },
    { device: 'd1', n: 7, closedAt: 15, row: row('d1', 7, 15, 'handed-over') },
    { device: 'd1', n: 8, closedAt: 5, row: 'cancelled' },
  ]);
  const deliveries = [own('delivery/acme/d1/m7', 25)];
  expect(await lines(client, {}, deliveries, Infinity, activities)).toEqual(['m6', 'm2', 'm7', 'm5', 'm1', 'm8']);
  expect(await lines(client, { state: 'cancelled' }, [], Infinity, activities)).toEqual(['m8']);
  expect(await lines(client, { state: 'delivered', since: new Date(t(18)) }, [], Infinity, activities)).toEqual(['m6', 'm2', 'm5']);
});
