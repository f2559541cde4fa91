import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver } from '../../../src/client/index';
import { CLI } from '../../support/cli';
import { freePort } from '../../support/ports';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

// A real `redeliver worker` process, as a container runs it: its health and Prometheus endpoints, and
// SIGTERM in the middle of an attempt — the attempt finishes within the grace time, or is handed back
// and delivered by another worker; nothing is lost either way.

/** An endpoint that holds every request until the test answers it. */
interface SlowEndpoint {
  url: string;
  /** Requests in arrival order, each with a way to answer it. */
  requests: { messageId: string; attempt: string; answer(status: number): void; aborted: Promise<void> }[];
  arrived(n: number): Promise<void>;
  close(): Promise<void>;
}

async function startSlowEndpoint(): Promise<SlowEndpoint> {
  const requests: SlowEndpoint['requests'] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const aborted = new Promise<void>((resolve) => res.once('close', () => !res.writableEnded && resolve()));
    requests.push({
      messageId: String(req.headers['message-id']),
      attempt: String(req.headers['delivery-attempt']),
      answer: (status) => res.writeHead(status).end(),
      aborted,
    });
    for (const w of waiters.filter((w) => requests.length >= w.n)) w.resolve();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    arrived: (n) => (requests.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

interface WorkerProcess {
  child: ChildProcess;
  health: string;
  metrics: string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/** `node lib/cli/main.js worker`, configured only through its environment, as in the image. */
async function startWorkerProcess(taskQueue: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const [healthPort, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [CLI, 'worker'], {
    env: {
      PATH: process.env.PATH,
      HOME: mkdtempSync(path.join(tmpdir(), 'redeliver-worker-')),
      TEMPORAL_ADDRESS: testAddress(),
      REDELIVER_TASK_QUEUE: taskQueue,
      REDELIVER_WORKFLOW_BUNDLE: process.env.REDELIVER_TEST_BUNDLE!,
      REDELIVER_ALLOW_ADDRESSES: 'loopback',
      REDELIVER_HEALTH_ADDRESS: `127.0.0.1:${healthPort}`,
      REDELIVER_PROMETHEUS_ADDRESS: `127.0.0.1:${metricsPort}`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const worker = {
    child,
    health: `http://127.0.0.1:${healthPort}/healthz`,
    metrics: `http://127.0.0.1:${metricsPort}/metrics`,
    stderr: () => stderr,
    exited,
  };
  await waitFor(
    () => healthOf(worker),
    (s) => s === 200 || child.exitCode !== null,
    30_000,
    'the worker to report healthy',
  );
  if (child.exitCode !== null) throw new Error(`the worker exited at start:\n${stderr}`);
  return worker;
}

const healthOf = (w: { health: string }) =>
  fetch(w.health).then(
    (r) => r.status,
    () => 0,
  );

const processes: WorkerProcess[] = [];
let endpoint: SlowEndpoint;
let connection: Connection;
/** A producer: submits to a task queue, runs nothing. */
const producer = (taskQueue: string) => new Redeliver(new Client({ connection }), { taskQueue });
beforeAll(async () => {
  [endpoint, connection] = await Promise.all([startSlowEndpoint(), connectClient({ address: testAddress() })]);
});
afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await endpoint?.close();
  await connection?.close();
});

describe('a worker that finishes its attempt on SIGTERM', () => {
  const taskQueue = `sigterm-finish-${randomUUID()}`;
  let worker: WorkerProcess;
  let next: Harness | undefined;
  beforeAll(async () => {
    worker = await startWorkerProcess(taskQueue, { REDELIVER_SHUTDOWN_GRACE: '30s' });
    processes.push(worker);
  }, 60_000);
  afterAll(async () => {
    await next?.stop();
  });

  test('serves the SDK metrics for Prometheus', async () => {
    const text = await waitFor(
      () => fetch(worker.metrics).then((r) => r.text()),
      (t) => t.includes('temporal_worker_task_slots_available'),
      15_000,
      'task slot metrics',
    );
    expect(text).toMatch(/^# TYPE temporal_\w+ /m);
    expect(text).toMatch(
      new RegExp(`temporal_worker_task_slots_available\\{[^}]*task_queue="${taskQueue}"[^}]*worker_type="ActivityWorker"[^}]*\\} 200`),
    );
  });

  test('an attempt in flight at SIGTERM finishes on the stopping worker; the delivery completes, sent once', async () => {
    const handle = await producer(taskQueue).submit({
      kind: 'event',
      tenant: 'acme',
      device: 'd1',
      messageId: randomUUID(),
      target: `${endpoint.url}/slow`,
      payload: 'x',
    });
    await endpoint.arrived(1);
    const request = endpoint.requests[0]!;

    worker.child.kill('SIGTERM');
    // it stops polling at once and says so …
    await waitFor(
      () => healthOf(worker),
      (s) => s === 503 || s === 0,
      10_000,
      'the worker to report draining',
    );
    expect(worker.child.exitCode).toBeNull();
    // … but waits for the attempt in flight, which then succeeds
    const answeredAt = Date.now();
    request.answer(202);
    const exit = await worker.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.at).toBeGreaterThanOrEqual(answeredAt);
    expect(worker.stderr()).toContain('worker stopped');

    // the next worker (a rolling restart) records the outcome; the attempt is not repeated
    next = await startHarness(undefined, { taskQueue });
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
    expect(endpoint.requests.filter((r) => r.messageId === request.messageId)).toHaveLength(1);
  });
});

describe('a worker whose grace time runs out on SIGTERM', () => {
  const taskQueue = `sigterm-handback-${randomUUID()}`;
  let next: Harness | undefined;
  afterAll(async () => {
    await next?.stop();
  });

  test('hands the attempt back; another worker delivers it; nothing is lost', async () => {
    const worker = await startWorkerProcess(taskQueue, { REDELIVER_SHUTDOWN_GRACE: '300ms' });
    processes.push(worker);
    const before = endpoint.requests.length;
    const handle = await producer(taskQueue).submit({
      kind: 'event',
      tenant: 'acme',
      device: 'd2',
      messageId: randomUUID(),
      target: `${endpoint.url}/hang`,
      payload: 'x',
    });
    await endpoint.arrived(before + 1);
    const first = endpoint.requests[before]!;

    worker.child.kill('SIGTERM');
    // the endpoint never answers: after the grace time the worker aborts the request and hands it back
    await first.aborted;
    expect(await worker.exited).toMatchObject({ code: 0, signal: null });

    next = await startHarness(undefined, { taskQueue });
    await endpoint.arrived(before + 2);
    const second = endpoint.requests[before + 1]!;
    expect(second).toMatchObject({ messageId: first.messageId, attempt: '2' });
    second.answer(202);
    const result = await handle.result();
    expect(result).toMatchObject({
      outcome: 'delivered',
      attempts: 2,
      lastError: { class: 'connection', code: 'worker-shutdown', attempt: 1 },
    });
  });
});
