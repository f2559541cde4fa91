/**
 * Faults on a real Temporal cluster on PostgreSQL (`redeliver cluster up`: frontend, two history hosts,
 * matching and worker as processes of their own), nothing lost, every delivery with exactly one outcome: a
 * history host killed while 500 deliveries wait, PostgreSQL restarted while deliveries wait, the frontend
 * restarted while producers submit. Lateness is quoted on stderr; the bounds only catch a wait that never fires.
 */
import { randomUUID } from 'node:crypto';
import { Client, type Connection, ServiceError } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver, type DeliveryHandle } from '../../../src/client/index';
import { startService, stopService } from '../../../src/cluster/cluster';
import type { DeliveryInput, DeliveryResult } from '../../../src/delivery/types';
import {
  CLUSTER_START_TIMEOUT_MS,
  historyShards,
  removeTestCluster,
  startTestCluster,
  waitForShards,
  type TestCluster,
} from '../../support/cluster';
import { retryTiming } from '../../support/histories';
import { eventTo } from '../../support/messages';
import { startReceiver, type Receiver } from '../../support/receiver';
import { waitFor } from '../../support/wait';
import { spawnWorker, type WorkerProcess } from '../../support/worker-process';

let cluster: TestCluster;
let connection: Connection;
let client: Client;
let redeliver: Redeliver;
let worker: WorkerProcess;
let receiver: Receiver;

beforeAll(async () => {
  cluster = await startTestCluster();
  const taskQueue = `faults-${randomUUID()}`;
  // a worker process of its own, as in production (the endpoint shares this process with the test); no retry
  // budget: hundreds of waits ending within seconds of each other would be held back by it on purpose; no outage
  // holds: these tests are about hundreds of deliveries each waiting on the server's timers, which a hold would keep
  // together in one workflow (docs/endpoint-health.md, "Outages")
  worker = spawnWorker({ address: cluster.address, taskQueue, env: { REDELIVER_RETRY_BUDGET: 'off', REDELIVER_OUTAGE_HOLD: 'off' } });
  [receiver, connection] = await Promise.all([startReceiver(), connectClient({ address: cluster.address }), worker.ready]);
  client = new Client({ connection });
  redeliver = new Redeliver(client, { taskQueue });
  // these tests script the endpoint's failures themselves, hundreds at once: the circuit breaker would hold
  // the attempts they count on (docs/endpoint-health.md)
  await redeliver.endpoint(receiver.url).set({ breaker: 'off' });
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await worker?.kill('SIGTERM');
  await connection?.close();
  await receiver?.close();
  await removeTestCluster(cluster?.dir);
}, 90_000);

/** Waits until `n` deliveries with these inputs' device wait for a retry, as Temporal's visibility (the DeliveryState search attribute) says. */
async function allWaiting(device: string, n: number, timeoutMs: number): Promise<void> {
  await waitFor(
    () => redeliver.count({ device, state: 'waiting' }),
    (count) => count === n,
    timeoutMs,
    `${n} deliveries of ${device} waiting`,
  );
}

/**
 * Each delivery ends delivered on its second attempt, and the receiver holds each message exactly once. Returns,
 * per delivery, how late attempt 2 reached the receiver and how late the server started the activity execution
 * that sent it, against its planned time (the retrying activity's input, in the delivery's history).
 */
async function deliveredOnce(
  handles: DeliveryHandle[],
  inputs: DeliveryInput[],
): Promise<{ planned: number[]; arrival: number[]; started: number[] }> {
  const results = await Promise.all(handles.map(resultOf));
  for (const result of results) expect(result).toMatchObject({ outcome: 'delivered', attempts: 2 });
  const accepted = receiver.accepted();
  for (const input of inputs) {
    expect(receiver.of(input.messageId!).map((r) => r.attempt)).toEqual([1, 2]);
    expect(accepted.has(input.messageId!)).toBe(true);
  }
  const timings = await timingsOf(handles, 'first');
  return {
    planned: timings.map((t) => t.planned),
    arrival: inputs.map((input, i) => receiver.of(input.messageId!)[1]!.at - timings[i]!.planned),
    started: timings.map((t) => t.started - t.planned),
  };
}

/** Each delivery's retry timing (test/support/histories.ts), read 25 histories at a time. */
async function timingsOf(handles: DeliveryHandle[], plan: 'first' | 'last'): Promise<Awaited<ReturnType<typeof retryTiming>>[]> {
  const timings: Awaited<ReturnType<typeof retryTiming>>[] = [];
  for (let i = 0; i < handles.length; i += 25)
    timings.push(...(await Promise.all(handles.slice(i, i + 25).map((h) => retryTiming(client, h, plan)))));
  return timings;
}

/**
 * A delivery's outcome. Waiting for it is a long poll of its history, which fails (DEADLINE_EXCEEDED, UNAVAILABLE)
 * while the history host holding its shard is gone and the shard not yet taken over: asked again, as a caller would.
 */
async function resultOf(handle: DeliveryHandle): Promise<DeliveryResult> {
  for (;;) {
    try {
      return await handle.result();
    } catch (err) {
      const code = ((err as Error).cause as { code?: number } | undefined)?.code;
      // gRPC's DEADLINE_EXCEEDED and UNAVAILABLE
      if (!(err instanceof ServiceError) || (code !== 4 && code !== 14)) throw err;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

const summary = (late: number[]) => {
  const sorted = [...late].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`;
};

test('a history host killed with SIGKILL while 500 deliveries wait: the other host takes its shards and every wait fires', async () => {
  const n = 500;
  // Until all 500 are deliveries of their own (a batch makes their first attempts, the worker then starts each one:
  // from 35 s to minutes on this shared 2-core machine), the endpoint tells each to come back in a minute: a retry
  // of the same class costs the worker no workflow task. Then it names one time for all, 75 s on (+ 0–19 s by
  // message), which each delivery learns at its next retry; history-1 is killed 2 s before it.
  const wake: { at?: number } = {};
  const hinted = new Set<string>();
  receiver.route('/history-kill', ({ messageId }) => {
    if (wake.at === undefined) return { status: 503, retryAfter: '60' };
    if (Date.now() >= wake.at - 1_000) return { status: 202 };
    hinted.add(messageId!);
    return { status: 503, retryAfter: new Date(wake.at + (Number(messageId!.split('-')[1]) % 20) * 1_000).toUTCString() };
  });
  const inputs = Array.from({ length: n }, (_, i) =>
    eventTo(receiver.url, 'history-kill', '/history-kill', { messageId: `hk-${i}`, policy: {} }),
  );
  const submission = await redeliver.submitBatch(inputs);
  expect(submission.deliveryIds.map((id) => id.split('/').pop())).toEqual(inputs.map((input) => input.messageId));
  const handles = submission.deliveryIds.map((id) => redeliver.getHandle(id));
  await allWaiting('history-kill', n, 600_000);
  wake.at = Date.now() + 75_000;
  await waitFor(
    async () => hinted.size,
    (size) => size === n,
    70_000,
    'every delivery told the time',
  );
  const before = await historyShards(cluster);
  expect(before['history-1']).toBeGreaterThan(0);
  expect(before['history-2']).toBeGreaterThan(0);

  await new Promise((r) => setTimeout(r, wake.at! - 2_000 - Date.now()));
  await stopService(cluster.dir, 'history-1', 'SIGKILL');
  const killedAt = Date.now();
  const results = await Promise.all(handles.map(resultOf));
  for (const result of results) expect(result.outcome).toBe('delivered');
  const accepted = receiver.accepted();
  const timings = await timingsOf(handles, 'last');
  const planned = timings.map((t) => t.planned);
  // at least once: an attempt whose completion was lost with history-1 is sent again, with the same message id
  let sentAgain = 0;
  const arrival = inputs.map((input, i) => {
    const seen = receiver.of(input.messageId!);
    expect(accepted.has(input.messageId!)).toBe(true);
    expect(new Set(seen.map((r) => r.body)).size).toBe(1);
    if (seen.filter((r) => r.outcome === 202).length > 1) sentAgain++;
    // the attempt the delivery ended with, whose plan its history records
    return seen[seen.length - 1]!.at - planned[i]!;
  });
  expect(Math.min(...planned)).toBeGreaterThan(killedAt);
  for (const late of arrival) expect(late).toBeGreaterThanOrEqual(0);
  // failure detection, the handover and the backlog of waits that ended meanwhile: well under 2 minutes
  expect(Math.max(...arrival)).toBeLessThan(120_000);
  const after = await waitForShards(cluster, (shards) => shards['history-2'] === cluster.historyShards, 'history-2 owning every shard');
  process.stderr.write(
    `history-1 killed ${Math.min(...planned) - killedAt} ms before the first wait ended; shards before ${JSON.stringify(before)}, ` +
      `after ${JSON.stringify(after)}; lateness of ${n} retries: at the endpoint ${summary(arrival)}; ` +
      `the server's start of the retry ${summary(timings.map((t) => t.started - t.planned))}; delivered twice: ${sentAgain}\n`,
  );

  // back to two hosts for the tests after this one
  startService(cluster.dir, 'history-1');
  await waitForShards(cluster, (shards) => (shards['history-1'] ?? 0) > 0, 'history-1 holding shards again');
}, 1_200_000);

test('PostgreSQL restarted while deliveries wait: nothing is lost, waits that ended while it was down fire once it is back', async () => {
  receiver.route('/postgres-restart', ({ nth }) => (nth === 1 ? { status: 503 } : { status: 202 }));
  // waits of 20–38 s from the first attempt: some end while PostgreSQL is down, the rest after
  const waits = Array.from({ length: 40 }, (_, i) => 20_000 + (i % 10) * 2_000);
  const inputs = waits.map((wait) =>
    eventTo(receiver.url, 'postgres-restart', '/postgres-restart', { policy: { jitter: 'none', initial: wait, min: wait, max: wait } }),
  );
  const handles = await redeliver.submitMany(inputs);
  await allWaiting('postgres-restart', inputs.length, 60_000);
  // planned: the first attempt's arrival + its wait (to the ms: the history says it exactly, read below)
  const due = inputs.map((input, i) => receiver.of(input.messageId!)[0]!.at + waits[i]!);
  const firstDue = Math.min(...due);
  expect(Date.now()).toBeLessThan(firstDue - 2_000);
  await new Promise((r) => setTimeout(r, firstDue - 1_000 - Date.now()));
  await stopService(cluster.dir, 'postgresql', 'SIGINT');
  const downAt = Date.now();
  await new Promise((r) => setTimeout(r, 8_000));
  startService(cluster.dir, 'postgresql');
  const upAt = Date.now();

  const { planned, arrival } = await deliveredOnce(handles, inputs);
  const duringOutage = planned.filter((p) => p < upAt).length;
  expect(duringOutage).toBeGreaterThan(0);
  expect(planned.filter((p) => p > upAt + 2_000).length).toBeGreaterThan(0);
  for (const late of arrival) expect(late).toBeGreaterThanOrEqual(0);
  // a wait that ended while PostgreSQL was down fires once it is back: its lateness counted from then
  const afterUp = arrival.map((late, i) => late - Math.max(0, upAt - planned[i]!));
  expect(Math.max(...afterUp)).toBeLessThan(60_000);
  process.stderr.write(
    `PostgreSQL down ${upAt - downAt} ms; ${duringOutage} of ${inputs.length} waits ended meanwhile; ` +
      `each retry at the endpoint after max(its planned time, PostgreSQL back): ${summary(afterUp)}\n`,
  );
}, 300_000);

test('the frontend restarted while producers submit: the client retries carry the submits, and every accepted one is delivered', async () => {
  receiver.route('/frontend-restart', () => ({ status: 202 }));
  const accepted: { handle: DeliveryHandle; input: DeliveryInput; at: number }[] = [];
  const refused: string[] = [];
  let producing = true;
  // 4 producers, one submit after another, until 10 s after the frontend is back
  const producer = async () => {
    while (producing) {
      const input = eventTo(receiver.url, 'frontend-restart', '/frontend-restart', { messageId: `fr-${randomUUID()}` });
      const at = Date.now();
      try {
        accepted.push({ handle: await redeliver.submit(input), input, at });
      } catch (err) {
        refused.push(String(err));
      }
    }
  };
  const producers = Array.from({ length: 4 }, producer);
  await waitFor(
    async () => accepted.length,
    (count) => count >= 20,
    60_000,
    'submits before the restart',
  );
  await stopService(cluster.dir, 'frontend', 'SIGKILL');
  const from = Date.now();
  startService(cluster.dir, 'frontend');
  const acceptedBefore = accepted.length;
  await waitFor(
    async () => accepted.length,
    (count) => count > acceptedBefore,
    120_000,
    'a submit accepted after the restart',
  );
  const down = { from, to: Date.now() };
  await new Promise((r) => setTimeout(r, 10_000));
  producing = false;
  await Promise.all(producers);

  const results = await Promise.all(accepted.map((a) => a.handle.result()));
  for (const result of results) expect(result.outcome).toBe('delivered');
  const received = receiver.accepted();
  // at least once: an attempt whose answer was lost with the frontend is sent again, with the same message id
  const again: string[] = [];
  for (const [i, { input }] of accepted.entries()) {
    const seen = receiver.of(input.messageId!);
    expect(received.has(input.messageId!)).toBe(true);
    expect(new Set(seen.map((r) => r.body))).toEqual(new Set([JSON.stringify(input.payload)]));
    if (seen.length > 1) again.push(`${seen.map((r) => `#${r.attempt} ${r.outcome}`).join(', ')} (${results[i]!.lastError?.code})`);
  }
  // submits made while the frontend was gone were carried by the client's retries
  const carried = accepted.filter((a) => a.at >= down.from && a.at < down.to).length;
  expect(carried).toBeGreaterThan(0);
  expect(refused).toEqual([]);
  process.stderr.write(
    `frontend killed and restarted: first submit accepted again after ${down.to - down.from} ms; ${accepted.length} submits accepted ` +
      `(${carried} of them begun while it was down), ${refused.length} refused; all delivered; sent more than once: ${again.length}` +
      `${again.length ? ` (${again.slice(0, 5).join('; ')})` : ''}\n`,
  );
}, 300_000);
