/**
 * An outage under batches, on the suite's dev server (docs/endpoint-health.md, "Outages"): while the endpoint fails,
 * the batches' failed messages wait together in an outage hold — no workflow per message — with only probes going
 * to the endpoint; once it answers again they are all delivered, each with its own next attempt.
 */
import { randomUUID } from 'node:crypto';
import { type Redeliver } from '../../../src/client/index';
import { holdSummaryQuery, type BatchResult, type MessageResult } from '../../../src/contract';
import type { DeliveryInput } from '../../../src/delivery/types';
import { mostInFlight, startReceiver } from '../../support/receiver';
import { useHarnessAndReceiver } from '../../support/setup';
import { waitFor } from '../../support/wait';

const env = useHarnessAndReceiver();

const tenant = `outage-${randomUUID().slice(0, 8)}`;
const message = (path: string, n: number): DeliveryInput => ({
  kind: 'telemetry',
  qos: 1,
  tenant,
  device: `d-${n % 10}`,
  messageId: `m-${n}-${randomUUID().slice(0, 6)}`,
  payload: { n },
  target: `${env.receiver.url}${path}`,
});

async function count(query: string): Promise<number> {
  const { count } = await env.h.client.workflow.count(query);
  return count;
}

test('an endpoint down under two batches: its messages wait in one hold, probes alone reach it, and all are delivered once it is back', async () => {
  const redeliver: Redeliver = env.h.redeliver;
  let down = true;
  env.receiver.route('/outage', () => (down ? { status: 503 } : { status: 202 }));
  const first = Array.from({ length: 150 }, (_, n) => message('/outage', n));
  const second = Array.from({ length: 150 }, (_, n) => message('/outage', 1_000 + n));

  const one = await (await redeliver.submitBatch(first, { batchId: `one-${randomUUID()}` })).batches[0]!.result();
  const byDisposition = (r: BatchResult) => {
    const by: Partial<Record<MessageResult['disposition'], MessageResult[]>> = {};
    for (const m of r.results) (by[m.disposition] ??= []).push(m);
    return by;
  };
  // the first failures, while the endpoint still looked healthy, go on their own; the rest wait together
  const handedOver = byDisposition(one)['handed-over'] ?? [];
  expect(handedOver.length).toBeLessThanOrEqual(2);
  expect(byDisposition(one).held!.length).toBe(150 - handedOver.length);
  const holds = new Set(byDisposition(one).held!.map((m) => m.hold));
  expect(holds.size).toBe(1);
  const holdId = [...holds][0]!;

  // the endpoint is now known to fail: the next batch sends none of its messages, they join the same hold unsent
  const sentBefore = env.receiver.requests.filter((r) => r.path === '/outage').length;
  const two = await (await redeliver.submitBatch(second, { batchId: `two-${randomUUID()}` })).batches[0]!.result();
  expect(two.results.every((m) => m.disposition === 'held' && m.code === 'held' && m.hold === holdId)).toBe(true);
  const hold = env.h.client.workflow.getHandle(holdId);
  expect(await hold.query(holdSummaryQuery)).toMatchObject({ waiting: 300 - handedOver.length, endpoint: new URL(env.receiver.url).host });

  // while down, what waits in the hold sends only probes: one at a time, at most one a second, each a new attempt
  const probesFrom = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  const ownDeliveries = new Set(handedOver.map((m) => m.messageId));
  const probes = env.receiver.requests.slice(sentBefore).filter((r) => r.path === '/outage' && !ownDeliveries.has(r.messageId!));
  expect(probes.length).toBeLessThanOrEqual(Math.ceil((Date.now() - probesFrom) / 1_000) + 2);
  expect(probes.length).toBeGreaterThanOrEqual(2);
  const probed = probes.filter((r) => r.messageId === probes[0]!.messageId).map((r) => r.attempt);
  expect(probed).toEqual(probed.map((_, i) => probed[0]! + i));

  // listed by state, without a workflow each: the device's held messages waiting, each once (docs/batches.md)
  const heldOf = (device: string) =>
    [one, two].flatMap((r) => byDisposition(r).held!.filter((m) => m.deliveryId.startsWith(`delivery/${tenant}/${device}/`)));
  const listed = async (state: 'waiting' | 'delivered') => {
    const rows = [];
    for await (const row of redeliver.list({ tenant, device: 'd-3', state })) rows.push(row);
    return rows;
  };
  // once visibility has both batches closed
  const waiting = await waitFor(
    () => listed('waiting'),
    (rows) => rows.length >= heldOf('d-3').length,
    10_000,
    'the device’s held messages listed as waiting',
  );
  expect(waiting.map((r) => r.deliveryId).sort()).toEqual(
    heldOf('d-3')
      .map((m) => m.deliveryId)
      .sort(),
  );
  expect(waiting.every((r) => r.hold?.holdId === holdId && r.closedAt === null)).toBe(true);
  // the last error: the first attempt's, where the batch made one (one held unsent has none, or a probe's)
  const failedFirstIds = new Set(
    heldOf('d-3')
      .filter((m) => m.code === 'http-503')
      .map((m) => m.deliveryId),
  );
  expect(failedFirstIds.size).toBeGreaterThan(0);
  for (const r of waiting.filter((r) => failedFirstIds.has(r.deliveryId))) expect(r.lastErrorClass).toBe('server');

  down = false;
  const ids = new Set([...first, ...second].map((m) => m.messageId!));
  await waitFor(
    () => Promise.resolve([...env.receiver.accepted()].filter((id) => ids.has(id)).length),
    (n) => n === 300,
    60_000,
    'every message delivered after the endpoint came back',
  );
  // a held message's next attempt carries its own number: 2 after a failed first attempt, 1 for one held unsent
  const attemptOf = (id: string) => env.receiver.of(id).find((r) => r.outcome === 202)!.attempt;
  expect(attemptOf(second[0]!.messageId!)).toBe(1);
  const failedFirst = byDisposition(one).held!.filter((m) => m.code === 'http-503');
  expect(failedFirst.length).toBeGreaterThan(0);
  for (const m of failedFirst) expect(attemptOf(m.messageId)).toBeGreaterThanOrEqual(2);
  for (const m of byDisposition(one).held!.filter((m) => m.code === 'held')) expect(attemptOf(m.messageId)).toBe(1);
  // no workflow per waiting message: the hold, the batches, and the few that failed alone
  expect(await count(`WorkflowType = 'deliveryWorkflow' AND Tenant = '${tenant}'`)).toBe(handedOver.length);
  const summary = await waitFor(
    () => hold.query(holdSummaryQuery),
    (s) => s.waiting === 0,
    10_000,
    'the hold empty',
  );
  expect(summary.received).toBe(300 - handedOver.length);
  // then listed as delivered from the hold, the device's own deliveries beside them
  const ownOfDevice = handedOver.filter((m) => m.deliveryId.startsWith(`delivery/${tenant}/d-3/`)).map((m) => m.deliveryId);
  const everyOne = [...heldOf('d-3').map((m) => m.deliveryId), ...ownOfDevice].sort();
  // the deliveries of their own are listed once visibility has their end (a moment after the receiver's answer)
  const delivered = await waitFor(
    () => listed('delivered'),
    (rows) => rows.length >= everyOne.length,
    10_000,
    'the device’s messages listed as delivered',
  );
  expect(delivered.map((r) => r.deliveryId).sort()).toEqual(everyOne);
  // its history: a dozen events per batch handed in and per round, well under one per message
  const { historyLength } = (await hold.describe()).raw.workflowExecutionInfo!;
  expect(Number(historyLength) / summary.received).toBeLessThan(0.3);
});

test('the release paces itself: its window grows to the endpoint’s max-in-flight and never past it, and shrinks to probes at once when the endpoint fails again', async () => {
  const other = await startReceiver();
  try {
    const endpoint = new URL(other.url).host;
    await env.h.redeliver.endpoint(other.url).set({ maxInFlight: 4 });
    let state: 'down' | 'up' = 'down';
    other.route('/paced', () => (state === 'down' ? { status: 503, delayMs: 20 } : { status: 202, delayMs: 40 }));
    const inputs = Array.from({ length: 200 }, (_, n) => message('/paced', 5_000 + n)).map((m) => ({ ...m, target: `${other.url}/paced` }));
    const result = await (await env.h.redeliver.submitBatch(inputs, { batchId: `paced-${randomUUID()}` })).batches[0]!.result();
    const held = result.results.filter((m) => m.disposition === 'held');
    expect(held.length).toBeGreaterThanOrEqual(190);
    const ids = new Set(held.map((m) => m.messageId));

    state = 'up';
    const upAt = other.requests.length;
    await waitFor(
      () => Promise.resolve([...other.accepted()].filter((id) => ids.has(id)).length),
      (n) => n >= 100,
      60_000,
      'half released',
    );
    // the endpoint fails again mid-release: what is in flight ends, then probes alone
    state = 'down';
    const downAt = other.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const whileDownAgain = other.requests.slice(downAt).length;
    const released = other.requests.slice(upAt, downAt);
    // never past the endpoint's own limit, and up to it once the endpoint kept succeeding (the window grew)
    expect(mostInFlight(released)).toBeLessThanOrEqual(4);
    expect(mostInFlight(released)).toBe(4);
    // in flight when it failed (≤ 4), the failures that tell it (3 in a row), then one probe a second
    expect(whileDownAgain).toBeLessThanOrEqual(4 + 3 + 4);

    state = 'up';
    await waitFor(
      () => Promise.resolve([...other.accepted()].filter((id) => ids.has(id)).length),
      (n) => n === ids.size,
      60_000,
      'all released',
    );
    expect(mostInFlight(other.requests.slice(upAt))).toBeLessThanOrEqual(4);
    const summary = await env.h.client.workflow.getHandle(held[0]!.hold!).query(holdSummaryQuery);
    expect(summary).toMatchObject({ endpoint, waiting: 0 });
  } finally {
    await other.close();
  }
});
