import { randomUUID } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint, ReceivedRequest } from '../src/demo/flaky-endpoint';
import { DEAD_LETTER_STATES } from '../src/delivery/filter';
import { JOB_OPTIONS } from './bullmq';
import { forkWorkerProcess, mb, rssOf, round, startWorkerProcess, type BenchServer, type WorkerProcess } from './harness';
import { deadLettersByState, workflowFigures, type WorkflowFigures } from './outage-workflows';
import type { ProduceRun } from './producer-process';
import { startRedis } from './redis';
import { runProducer } from './redeliver-volume';
import { waitForDelivered } from './volume-row';
import { sinkAlone } from './volume';

/**
 * The outage benchmark (issue 27's targets; bench/README.md): a producer offers telemetry at a steady rate
 * through redeliver's batcher, as a gateway would, to one endpoint that answers 503 for a while in the middle;
 * the same with BullMQ; redeliver's healthy batch rate and the harness alone (sink, producer) in the same run.
 */
export interface OutageSizes {
  /** Messages offered a second, for so many seconds. */
  perSecond: number;
  seconds: number;
  /** The endpoint answers 503 from `downFrom` until `downUntil`, seconds after the producer's first message. */
  downFrom: number;
  downUntil: number;
}

/** One system through the outage: what reached the endpoint, what did not, how long the backlog took. */
export interface OutageRow {
  system: 'redeliver' | 'bullmq' | 'pg-boss';
  offered: number;
  /** The rate the producer achieved (messages ÷ first to last submit). */
  offeredPerSecond: number;
  /** Distinct Message-Ids the endpoint answered with a 2xx; `duplicates`: further 2xx for one of them. */
  delivered: number;
  duplicates: number;
  /** Messages that ended undelivered: redeliver's dead letters by state; BullMQ's failed jobs (out of attempts). */
  ended: Record<string, number>;
  /** false: the timeout came before every message was delivered or ended (the figures are what was there). */
  complete: boolean;
  /** Messages accepted before the recovery that the endpoint had not accepted by then. */
  backlog: number;
  /** From the recovery until the endpoint accepted the last of the backlog (null: some never were). */
  drainSeconds: number | null;
  /** Requests the endpoint answered with 503 (while it was down), and all requests of the run. */
  requestsWhileDown: number;
  requests: number;
  workerPeakRssMb: number;
  /** The dev server's (redeliver) or redis-server's (BullMQ), sampled every 500 ms during the run (bench/peers.ts: the cluster's, PostgreSQL's). */
  serverPeakRssMb: number;
}

export interface OutageResults {
  scenario: OutageSizes;
  /** The harness alone: the sink under a plain client, the producer with a batcher that starts nothing. */
  harness: { messages: number; sinkPerSecond: number; sinkCpuMsPerPost?: number; producerPerSecond: number };
  /** redeliver healthy: as many messages as the outage's backlog, all at once through the batcher, end to end. */
  healthy: { messages: number; perSecond: number; seconds: number };
  redeliver: OutageRow & { workflows: WorkflowFigures };
  bullmq: OutageRow;
}

/**
 * BullMQ's job options for the outage: section 6's (exponential backoff from 200 ms) with jitter, and attempts
 * enough to outlast the outage: 10 attempts of 200 ms doubling wait 51–102 s in all with the jitter, less than
 * the 60 s outage, and a job out of attempts would be lost, not late.
 */
const BULLMQ_OUTAGE_JOBS: JobsOptions = { ...JOB_OPTIONS, attempts: 20, backoff: { type: 'exponential', delay: 200, jitter: 0.5 } };

export async function outage(bench: BenchServer, sink: FlakyEndpoint, sizes: OutageSizes): Promise<OutageResults> {
  // what the outage is expected to leave waiting: the size of the healthy and harness runs
  const expectedBacklog = Math.max(1_000, sizes.perSecond * (sizes.downUntil - sizes.downFrom));
  const harness = await harnessAlone(bench, sink, expectedBacklog);
  console.log(`  outage harness: sink ${harness.sinkPerSecond}/s, producer ${harness.producerPerSecond}/s`);
  const healthy = await healthyRate(bench, sink, expectedBacklog);
  console.log(`  outage healthy: ${healthy.messages} messages at ${healthy.perSecond}/s`);
  const redeliver = await redeliverOutage(bench, sink, sizes);
  console.log(
    `  outage redeliver: drained ${redeliver.backlog} in ${redeliver.drainSeconds} s, ${redeliver.requestsWhileDown} requests while down`,
  );
  sink.received.length = 0;
  const bullmq = await bullmqOutage(bench, sink, sizes);
  console.log(`  outage bullmq: drained ${bullmq.backlog} in ${bullmq.drainSeconds} s, ${bullmq.requestsWhileDown} requests while down`);
  sink.received.length = 0;
  return { scenario: sizes, harness, healthy, redeliver, bullmq };
}

async function harnessAlone(bench: BenchServer, sink: FlakyEndpoint, messages: number): Promise<OutageResults['harness']> {
  const alone = await sinkAlone(sink, messages);
  sink.received.length = 0;
  const producerPerSecond = await withProducer(bench, `outage-producer-${randomUUID().slice(0, 6)}`, async (producer) => {
    const run = { sinkUrl: sink.url, path: '/outage/nowhere', perSecond: 0, messages, into: 'nowhere' as const };
    const { submittedAt, acceptedAt } = await runProducer(producer, run);
    return round(messages / ((acceptedAt - submittedAt[0]!) / 1000), 1);
  });
  return {
    messages,
    sinkPerSecond: alone.perSecond,
    ...(alone.sinkCpuMsPerMessage !== undefined && { sinkCpuMsPerPost: alone.sinkCpuMsPerMessage }),
    producerPerSecond,
  };
}

/**
 * redeliver's healthy batch rate: `messages` handed to the batcher at once (after a warm-up of the fresh worker
 * and producer), from the first submit until the endpoint accepted the last: the rate a backlog of that size
 * drains at when nothing fails. A worker and task queue of its own (its endpoint's health is its own).
 */
export async function healthyRate(bench: BenchServer, sink: FlakyEndpoint, messages: number): Promise<OutageResults['healthy']> {
  const taskQueue = `outage-healthy-${randomUUID().slice(0, 6)}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  try {
    return await withProducer(bench, taskQueue, async (producer) => {
      const burst = async (path: string, count: number) => {
        const delivered = waitForDelivered(sink, path, count, 60_000 + count * 20);
        delivered.catch(() => undefined);
        const { submittedAt } = await runProducer(producer, { sinkUrl: sink.url, path, perSecond: 0, messages: count, tenant: taskQueue });
        return ((await delivered) - submittedAt[0]!) / 1000;
      };
      await burst(`/outage/warm-up-${taskQueue}`, Math.min(messages, 1_000));
      const seconds = await burst(`/outage/healthy-${taskQueue}`, messages);
      sink.received.length = 0;
      return { messages, perSecond: round(messages / seconds, 1), seconds: round(seconds, 2) };
    });
  } finally {
    await worker.stop();
  }
}

export async function redeliverOutage(bench: BenchServer, sink: FlakyEndpoint, sizes: OutageSizes): Promise<OutageResults['redeliver']> {
  const taskQueue = `outage-${randomUUID().slice(0, 6)}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  const redeliver = new Redeliver(bench.client, { taskQueue });
  try {
    const run = await withProducer(bench, taskQueue, (producer) =>
      runOutage(sink, producer, sizes, {
        system: 'redeliver',
        path: `/outage/${taskQueue}`,
        ended: async () => redeliver.count({ state: [...DEAD_LETTER_STATES] }),
        serverRss: () => bench.serverRss(),
      }),
    );
    // the deliveries' last workflow tasks close them after the endpoint's 2xx: their histories are complete after that
    await waitUntilNoneRun(bench, `WorkflowType = 'deliveryWorkflow' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`);
    const workflows = await workflowFigures(bench.client, taskQueue, run.down);
    const ended = await deadLettersByState(redeliver);
    return { ...run.row, ended, workerPeakRssMb: mb((await worker.stats()).peakRss), workflows };
  } finally {
    await worker.stop();
  }
}

async function bullmqOutage(bench: BenchServer, sink: FlakyEndpoint, sizes: OutageSizes): Promise<OutageRow> {
  const redis = await startRedis();
  const name = `outage-${randomUUID().slice(0, 6)}`;
  const worker = await forkWorkerProcess('bullmq-worker-process.js', [String(redis.port), name]);
  const queue = new Queue(name, { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    const run = await withProducer(bench, name, (producer) =>
      runOutage(sink, producer, sizes, {
        system: 'bullmq',
        path: `/outage/${name}`,
        into: { bullmq: { port: redis.port, queue: name, jobOptions: BULLMQ_OUTAGE_JOBS } },
        ended: () => queue.getFailedCount(),
        serverRss: () => rssOf(redis.pid),
      }),
    );
    const ended = { failed: await queue.getFailedCount() };
    return { ...run.row, ended, workerPeakRssMb: mb((await worker.stats()).peakRss) };
  } finally {
    await queue.close();
    await worker.stop();
    await redis.stop();
  }
}

export interface OutageSystem {
  system: OutageRow['system'];
  path: string;
  into?: ProduceRun['into'];
  /** How many messages ended undelivered so far. */
  ended(): Promise<number>;
  serverRss(): number;
}

/**
 * The scenario on one system: the producer starts at t0 and offers its messages at the steady rate; the
 * endpoint's path is down from t0 + downFrom until t0 + downUntil; then waits until every message was
 * delivered or ended, and reads the endpoint's log.
 */
export async function runOutage(
  sink: FlakyEndpoint,
  producer: WorkerProcess,
  sizes: OutageSizes,
  system: OutageSystem,
): Promise<{ row: Omit<OutageRow, 'ended' | 'workerPeakRssMb'>; down: { from: number; until: number } }> {
  const messages = sizes.perSecond * sizes.seconds;
  const t0 = Date.now() + 1_000;
  const down = { from: t0 + sizes.downFrom * 1000, until: t0 + sizes.downUntil * 1000 };
  const timers = [
    setTimeout(() => sink.setDown(system.path, true), down.from - Date.now()),
    setTimeout(() => sink.setDown(system.path, false), down.until - Date.now()),
  ];
  let serverPeakRss = 0;
  const sampling = setInterval(() => (serverPeakRss = Math.max(serverPeakRss, system.serverRss())), 500);
  try {
    // a tenant of the run's own: the messages handed over become deliveries whose ids no earlier section used
    const tenant = `outage-${randomUUID().slice(0, 6)}`;
    const run = { sinkUrl: sink.url, path: system.path, perSecond: sizes.perSecond, messages, startAt: t0, tenant };
    const { submittedAt } = await runProducer(producer, { ...run, ...(system.into && { into: system.into }) });
    // the outage ends on time even when the producer is done first
    await new Promise((r) => setTimeout(r, Math.max(0, down.until - Date.now())));
    const backlogGuess = sizes.perSecond * (sizes.downUntil - sizes.downFrom);
    const complete = await waitForEnd(sink, system, messages, 10 * 60_000 + backlogGuess * 150);
    const figures = sinkFigures(sink.received, system.path, submittedAt, down);
    const offeredPerSecond = round(messages / ((submittedAt.at(-1)! - submittedAt[0]!) / 1000), 1);
    return {
      row: { system: system.system, offered: messages, offeredPerSecond, complete, ...figures, serverPeakRssMb: mb(serverPeakRss) },
      down,
    };
  } finally {
    for (const timer of timers) clearTimeout(timer);
    clearInterval(sampling);
    sink.setDown(system.path, false);
  }
}

/** Until every message was delivered (a 2xx at the sink) or ended undelivered; false at the timeout. Logs progress. */
async function waitForEnd(sink: FlakyEndpoint, system: OutageSystem, messages: number, timeoutMs: number): Promise<boolean> {
  const delivered = new Set<string>();
  const deadline = Date.now() + timeoutMs;
  let scanned = 0;
  let ended = 0;
  let asked = 0;
  let logged = Date.now();
  for (;;) {
    for (; scanned < sink.received.length; scanned++) {
      const r = sink.received[scanned]!;
      if (r.path === system.path && r.status >= 200 && r.status < 300 && r.messageId) delivered.add(r.messageId);
    }
    if (delivered.size + ended >= messages) return true;
    // the undelivered are counted now and then (a visibility query, or a Redis call)
    if (Date.now() - asked > 2_000) {
      ended = await system.ended();
      asked = Date.now();
      if (delivered.size + ended >= messages) return true;
    }
    if (Date.now() - logged > 15_000) {
      console.log(`    ${system.system}: ${delivered.size} of ${messages} delivered, ${ended} ended undelivered`);
      logged = Date.now();
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The endpoint's log of one run: messages delivered, duplicates, requests while down, the backlog and its drain. */
export function sinkFigures(
  received: ReceivedRequest[],
  path: string,
  submittedAt: number[],
  down: { from: number; until: number },
): Pick<OutageRow, 'delivered' | 'duplicates' | 'backlog' | 'drainSeconds' | 'requestsWhileDown' | 'requests'> {
  const firstOk = new Map<string, number>();
  let oks = 0;
  let requests = 0;
  let requestsWhileDown = 0;
  for (const r of received) {
    if (r.path !== path) continue;
    requests++;
    if (r.status === 503) requestsWhileDown++;
    if (r.status < 200 || r.status >= 300 || !r.messageId) continue;
    oks++;
    if (!firstOk.has(r.messageId)) firstOk.set(r.messageId, r.at);
  }
  // message i's id is `m<i>` (volume-message.ts)
  const backlog = submittedAt.flatMap((at, i) => (at < down.until && !((firstOk.get(`m${i}`) ?? Infinity) < down.until) ? [`m${i}`] : []));
  const drainedAt = backlog.reduce((last, id) => Math.max(last, firstOk.get(id) ?? Infinity), down.until);
  return {
    delivered: firstOk.size,
    duplicates: oks - firstOk.size,
    backlog: backlog.length,
    drainSeconds: Number.isFinite(drainedAt) ? round((drainedAt - down.until) / 1000, 1) : null,
    requestsWhileDown,
    requests,
  };
}

async function withProducer<R>(bench: BenchServer, taskQueue: string, run: (producer: WorkerProcess) => Promise<R>): Promise<R> {
  const producer = await forkWorkerProcess('producer-process.js', [bench.server.address, taskQueue]);
  try {
    return await run(producer);
  } finally {
    await producer.stop();
  }
}

async function waitUntilNoneRun(bench: BenchServer, query: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await bench.client.workflow.count(query)).count > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
}
