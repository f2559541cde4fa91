/**
 * redeliver end to end on a Temporal cluster on PostgreSQL, started as a user starts it: `redeliver cluster
 * up` (the built CLI) runs the frontend, two history hosts sharing the shards, matching and worker as
 * processes of their own, with the configuration docker-compose.yml mounts (deploy/temporal/). Deliveries
 * with retries and Retry-After, dead letters and redrive, live controls, search-attribute queries from the CLI
 * and the official `temporal` CLI, and workers in processes of their own that share the task queue.
 */
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { lostRuns } from '../../../bench/soak-run';
import { Redeliver } from '../../../src/client/index';
import { ensureTemporalCli } from '../../../src/dev/temporal-cli';
import { runCli } from '../../support/cli';
import { CLUSTER_START_TIMEOUT_MS, newClusterDir, removeTestCluster } from '../../support/cluster';
import { eventTo } from '../../support/messages';
import { freePort } from '../../support/ports';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';
import { spawnWorker } from '../../support/worker-process';

const run = promisify(execFile);

const dir = newClusterDir();
let port: number;
let address: string;
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  port = await freePort();
  const up = await runCli(['cluster', 'up', '--dir', dir, '--port', String(port), '--no-ui']);
  if (up.code !== 0) throw new Error(`redeliver cluster up exited ${up.code}:\n${up.stderr}`);
  address = /^TEMPORAL_ADDRESS=(\S+)$/m.exec(up.stdout)![1]!;
  [h, receiver] = await Promise.all([startHarness(address), startReceiver()]);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await h?.stop();
  await receiver?.close();
  await removeTestCluster(dir);
}, 90_000);

const cli = (args: string[]) => runCli([...args, '--address', address, '--task-queue', h.taskQueue]);

interface StatusJson {
  address: string;
  services: { name: string; pid: number; port: number; running: boolean }[];
}

const status = async () => {
  const shown = await runCli(['cluster', 'status', '--dir', dir, '--json']);
  return { code: shown.code, ...(JSON.parse(shown.stdout) as StatusJson) };
};

const listening = (p: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(p, '127.0.0.1', () => resolve(socket.end() && true));
    socket.once('error', () => resolve(false));
  });

test('cluster up prints TEMPORAL_ADDRESS; status lists each service as a process of its own, serving on its port', async () => {
  expect(address).toBe(`127.0.0.1:${port}`);
  const shown = await status();
  expect(shown.code).toBe(0);
  expect(shown.address).toBe(address);
  expect(shown.services.map((s) => s.name)).toEqual(['postgresql', 'frontend', 'history-1', 'history-2', 'matching', 'worker']);
  expect(shown.services.find((s) => s.name === 'frontend')!.port).toBe(port);
  expect(new Set(shown.services.map((s) => s.pid)).size).toBe(shown.services.length);
  for (const service of shown.services) {
    expect(service.running).toBe(true);
    expect(() => process.kill(service.pid, 0)).not.toThrow();
    expect(await listening(service.port)).toBe(true);
  }
});

test('deliveries with retries and with Retry-After', async () => {
  receiver.route('/retries', ({ nth }) => (nth <= 2 ? { status: 503 } : { status: 202 }));
  receiver.route('/retry-after', ({ nth }) => (nth === 1 ? { status: 429, retryAfter: '2' } : { status: 202 }));
  const retried = eventTo(receiver.url, 'e2e', '/retries');
  const hinted = eventTo(receiver.url, 'e2e', '/retry-after');
  const results = await Promise.all([retried, hinted].map(async (input) => (await h.redeliver.submit(input)).result()));

  expect(results[0]).toMatchObject({ outcome: 'delivered', attempts: 3, lastError: { class: 'server', code: 'http-503' } });
  expect(results[1]).toMatchObject({ outcome: 'delivered', attempts: 2, lastError: { class: 'well-known', code: 'http-429' } });
  const [first, second] = receiver.of(hinted.messageId!);
  expect(second!.at - first!.at).toBeGreaterThanOrEqual(2_000);
});

test('a dead letter, and its redrive from the CLI', async () => {
  receiver.route('/dead-letter', ({ nth }) => (nth === 1 ? { status: 400 } : { status: 202 }));
  const input = eventTo(receiver.url, 'e2e', '/dead-letter');
  const handle = await h.redeliver.submit(input);
  expect(await handle.result()).toMatchObject({ outcome: 'rejected', attempts: 1 });

  const listed = await waitFor(
    async () => JSON.parse((await cli(['dead-letters', 'list', '--device', 'e2e', '--json'])).stdout) as { deliveryId: string }[],
    (rows) => rows.some((r) => r.deliveryId === handle.deliveryId),
    15_000,
    'the dead letter listed',
  );
  expect(listed.map((r) => r.deliveryId)).toContain(handle.deliveryId);
  const redriven = await cli(['redrive', handle.deliveryId]);
  expect(redriven.code).toBe(0);
  const result = await cli(['result', handle.deliveryId, '--json']);
  expect(JSON.parse(result.stdout)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect(receiver.of(input.messageId!).map((r) => r.outcome)).toEqual([400, 202]);
});

test('live controls from the CLI: pause, resume, retry now, cancel', async () => {
  receiver.route('/controls', ({ nth }) => (nth === 1 ? { status: 503 } : { status: 202 }));
  const waitLong = { jitter: 'none' as const, initial: '10m', min: '10m', max: '10m' };
  const [kept, cancelled] = await Promise.all(
    [0, 1].map(async () => {
      const handle = await h.redeliver.submit(eventTo(receiver.url, 'e2e-controls', '/controls', { policy: waitLong }));
      await waitFor(
        () => handle.status(),
        (s) => s.state === 'waiting',
        30_000,
        'waiting',
      );
      return handle;
    }),
  );
  const control = async (...args: string[]) => {
    const done = await cli([...args, '--json']);
    expect(done.code).toBe(0);
    return JSON.parse(done.stdout) as { state: string; attempts: number };
  };
  expect(await control('pause', kept!.deliveryId, '--reason', 'maintenance')).toMatchObject({ state: 'paused', attempts: 1 });
  await control('resume', kept!.deliveryId);
  await waitFor(
    () => kept!.status(),
    (s) => s.state === 'waiting',
    15_000,
    'waiting again',
  );
  const retriedAt = Date.now();
  await control('retry-now', kept!.deliveryId);
  expect(await kept!.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });
  expect(receiver.of(kept!.deliveryId.split('/').pop()!)[1]!.at - retriedAt).toBeLessThan(10_000);
  expect(await control('cancel', cancelled!.deliveryId)).toMatchObject({ state: 'cancelled', attempts: 1 });
});

test("search attributes answer queries from redeliver's CLI and from the official temporal CLI", async () => {
  receiver.route('/parked', () => ({ status: 503 }));
  const device = `parked-${Date.now()}`;
  const handles = await h.redeliver.submitMany(
    Array.from({ length: 3 }, () =>
      eventTo(receiver.url, device, '/parked', { policy: { jitter: 'none', initial: '10m', min: '10m', max: '10m' } }),
    ),
  );
  const ids = handles.map((x) => x.deliveryId).sort();
  const listed = await waitFor(
    async () => JSON.parse((await cli(['list', '--state', 'waiting', '--device', device, '--json'])).stdout) as { deliveryId: string }[],
    (rows) => rows.length === 3,
    30_000,
    'redeliver list',
  );
  expect(listed.map((r) => r.deliveryId).sort()).toEqual(ids);

  const temporal = await ensureTemporalCli();
  const query = `DeliveryState = 'waiting' AND Device = '${device}' AND Attempts = 1 AND LastErrorClass = 'server'`;
  const { stdout } = await run(temporal, ['workflow', 'list', '--address', address, '--query', query, '--output', 'json']);
  const rows = (JSON.parse(stdout) as { execution: { workflowId: string } }[]).map((r) => r.execution.workflowId).sort();
  expect(rows).toEqual(ids);
  await Promise.all(handles.map((x) => x.cancel()));
});

/**
 * A client on a task queue of the test's own, its endpoint's circuit breaker off (an endpoint's controls are
 * per task queue): these tests count retries sent while the endpoint fails, which the breaker would hold.
 */
async function onQueue(taskQueue: string): Promise<Redeliver> {
  const redeliver = new Redeliver(h.client, { taskQueue });
  await redeliver.endpoint(receiver.url).set({ breaker: 'off' });
  return redeliver;
}

/** The worker identities (`<pid>@host/…`) that ran a delivery's workflow and activity tasks. */
async function workersOf(client: Client, workflowId: string): Promise<Set<string>> {
  const { events } = await client.workflow.getHandle(workflowId).fetchHistory();
  const identities = (events ?? []).map(
    (e) => e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity,
  );
  return new Set(identities.filter((id): id is string => !!id).map((id) => id.split('@')[0]!));
}

/** Retries to `path` in the busiest `seconds` window that starts at or after `from`. */
function busiest(path: string, from: number, until: number, seconds: number): number {
  const retries = receiver.requests.filter((r) => r.path === path && (r.attempt ?? 1) > 1 && r.at < until).map((r) => r.at);
  let worst = 0;
  for (const start of retries.filter((t) => t >= from))
    worst = Math.max(worst, retries.filter((t) => t >= start && t < start + seconds * 1_000).length);
  return worst;
}

test('two workers in processes of their own share the task queue and the retry budget', async () => {
  const taskQueue = `e2e-shared-${Date.now()}`;
  // at INFO, each worker logs the share of the budget it takes when its count of the workers changes
  const env = { REDELIVER_LOG_LEVEL: 'INFO' };
  const workers = [spawnWorker({ address, taskQueue, env }), spawnWorker({ address, taskQueue, env })];
  try {
    await Promise.all(workers.map((w) => w.ready));
    // each counts the workers polling the task queue at start and every 10 s: once both have counted two, each
    // takes half (measured from the moment they say so, not from a guess: a count is a call to the server, late
    // under load, and one that fails keeps the last count for another 10 s)
    await waitFor(
      async () => workers.filter((w) => w.stderr().includes('this worker now takes 1/2 of')).length,
      (n) => n === 2,
      60_000,
      'both workers counting two on the task queue',
    );
    const sharedFrom = Date.now();
    let upAt = Number.POSITIVE_INFINITY;
    receiver.route('/shared', () => (Date.now() < upAt ? { status: 503 } : { status: 202 }));
    const redeliver = await onQueue(taskQueue);
    const inputs = Array.from({ length: 100 }, () =>
      eventTo(receiver.url, 'e2e-shared', '/shared', { policy: { initial: '100ms', min: '100ms', max: '1s' } }),
    );
    const handles = await redeliver.submitMany(inputs);
    await new Promise((r) => setTimeout(r, 20_000));
    upAt = Date.now();
    const results = await Promise.all(handles.map((x) => x.result()));

    expect(results.every((r) => r.outcome === 'delivered')).toBe(true);
    expect(receiver.accepted().size).toBeGreaterThanOrEqual(inputs.length);
    // 100 deliveries retrying every 0.1–1 s ask for ~100 retries a second; the budget, 10/s with a burst of 20
    // for both workers together, allows 10 × (10 + 1) + 20 in any 10 s (one second of timer precision included)
    const worst = busiest('/shared', sharedFrom, upAt, 10);
    expect(worst).toBeLessThanOrEqual(10 * 11 + 20);
    expect(worst).toBeGreaterThan(10 * 10 * 0.5);
    const pids = new Set<string>();
    for (const handle of handles.slice(0, 20)) for (const pid of await workersOf(h.client, handle.deliveryId)) pids.add(pid);
    expect([...pids].sort()).toEqual(workers.map((w) => String(w.process.pid)).sort());
    process.stderr.write(`two worker processes, one retry budget: busiest 10 s while down ${worst} retries\n`);
  } finally {
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
  }
}, 180_000);

test('a worker added while deliveries run takes its part; each message is delivered once', async () => {
  const taskQueue = `e2e-added-${Date.now()}`;
  // no retry budget: 450 retries to one endpoint would be held to 10 a second, and the run would take a while
  const env = { REDELIVER_RETRY_BUDGET: 'off' };
  const first = spawnWorker({ address, taskQueue, env });
  let added: ReturnType<typeof spawnWorker> | undefined;
  try {
    await first.ready;
    receiver.route('/added', ({ nth }) => (nth <= 3 ? { status: 503 } : { status: 202 }));
    const redeliver = await onQueue(taskQueue);
    const inputs = Array.from({ length: 150 }, () =>
      eventTo(receiver.url, 'e2e-added', '/added', { policy: { jitter: 'none', initial: '3s', min: '3s', max: '3s' } }),
    );
    const submitted = redeliver.submitMany(inputs);
    await waitFor(
      async () => receiver.requests.filter((r) => r.path === '/added').length,
      (n) => n >= 20,
      60_000,
      'the first worker at work',
    );
    added = spawnWorker({ address, taskQueue, env });
    await added.ready;
    const deliveredBefore = receiver.requests.filter((r) => r.path === '/added' && r.outcome === 202).length;
    expect(deliveredBefore).toBeLessThan(inputs.length);
    const handles = await submitted;
    const results = await Promise.all(handles.map((x) => x.result()));

    // each message: three refusals, then delivered once. An attempt whose run overran its time on a stalled worker
    // (a full run on 2 cores: 5 attempts once) is counted lost or sent again by Temporal's next run (at-least-once, as
    // the soak explains it): such a message must show that run in its history
    const unexplained: string[] = [];
    for (const [i, input] of inputs.entries()) {
      expect(results[i]).toMatchObject({ outcome: 'delivered' });
      const seen = receiver.of(input.messageId!).map((r) => r.outcome);
      if (results[i]!.attempts === 4 && JSON.stringify(seen) === JSON.stringify([503, 503, 503, 202])) continue;
      if ((await lostRuns(handles[i]!)) === 0) unexplained.push(`${input.messageId}: ${results[i]!.attempts} attempts, received ${seen}`);
    }
    expect(unexplained).toEqual([]);
    const byAdded = (await Promise.all(handles.map((x) => workersOf(h.client, x.deliveryId)))).filter((pids) =>
      pids.has(String(added!.process.pid)),
    );
    expect(byAdded.length).toBeGreaterThan(0);
    process.stderr.write(
      `worker added after ${deliveredBefore} of ${inputs.length} deliveries were done; it worked on ${byAdded.length} of them\n`,
    );
  } finally {
    await Promise.all([first.kill('SIGTERM'), added?.kill('SIGTERM')]);
  }
}, 300_000);

test('cluster down stops every process, and status says so', async () => {
  await h.stop();
  const down = await runCli(['cluster', 'down', '--dir', dir]);
  expect(down.code).toBe(0);
  const shown = await status();
  expect(shown.code).toBe(3);
  for (const service of shown.services) {
    expect(service.running).toBe(false);
    expect(await listening(service.port)).toBe(false);
  }
  h = undefined as unknown as Harness;
}, 60_000);
