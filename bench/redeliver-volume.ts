import { randomUUID } from 'node:crypto';
import { Redeliver, type RedeliverOptions } from '../src/client/index';
import { indexAttributes } from '../src/batching/message-index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { forkWorkerProcess, mb, quantile, round, startWorkerProcess, waitForCount, type BenchServer, type WorkerProcess } from './harness';
import { benchMessage } from './volume-message';
import type { Produced, ProduceRun } from './producer-process';
import { volumeRow, waitForDelivered, type VolumeRow } from './volume-row';

/** redeliver's rows of the volume benchmark (bench/volume.ts): batches, one workflow per message, latency, memory. */

/** A row of redeliver's, with its history events per message delivered at once, read from the run's histories. */
export type RedeliverVolumeRow = VolumeRow & { eventsPerMessage: number };

/** Lookups by id of messages delivered at once in their batches (issue 29): one at a time, after the run. */
export interface LookupFigures {
  lookups: number;
  p50Ms: number;
  maxMs: number;
  /** What the message index adds to the batches' start requests, per message (its search attributes' values). */
  indexBytesPerMessage: number;
}

/** Messages looked up by id after an indexed batch run. */
const LOOKUPS = 50;

/**
 * `messages` messages submitted with submitBatch (cut into batches of 500) to a worker in its own process, from
 * the first submit until the sink has every message's 2xx and every batch's workflow has closed (its close time). `index: false`:
 * the batches carry no message index (docs/batches.md, "Finding a message by its id"), the findability baseline;
 * with it, LOOKUPS messages spread over the run are then looked up by id. `measuring`: told right after the worker's
 * stats that open and close the measured span were read (bench/profile-batch.ts cuts the worker's CPU profile to it).
 */
export async function redeliverBatchVolume(
  bench: BenchServer,
  sink: FlakyEndpoint,
  messages: number,
  options: { index?: boolean; measuring?: (phase: 'start' | 'end', worker: WorkerProcess) => void } = {},
): Promise<RedeliverVolumeRow & { acceptedSeconds: number; lookup?: LookupFigures }> {
  const index = options.index ?? true;
  const name = index ? 'batch' : 'batch-unindexed';
  return withWorker(bench, name, { messageIndex: index }, async (redeliver, worker, taskQueue) => {
    const pathname = `/volume/${taskQueue}`;
    // a tenant of its own: the runs before sent the same message ids, and a lookup by id finds a delivery of its own first
    const inputs = Array.from({ length: messages }, (_, i) => benchMessage(sink.url, pathname, i, taskQueue));
    const delivered = waitForDelivered(sink, pathname, messages, 60_000 + messages * 20);
    delivered.catch(() => undefined);
    const before = await worker.stats();
    options.measuring?.('start', worker);
    const serverBefore = bench.serverCpuMs();
    const started = Date.now();
    const submission = await redeliver.submitBatch(inputs);
    // every batch durably started (bench/bridge.ts compares the bridge's acknowledgements with it)
    const acceptedSeconds = (Date.now() - started) / 1000;
    const lastArrival = await delivered;
    await waitForCount(
      bench.client,
      `WorkflowType = 'batchWorkflow' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`,
      submission.batches.length,
      10 * 60_000,
    );
    const after = await worker.stats();
    options.measuring?.('end', worker);
    const closed = await lastClose(bench, submission.batches);
    const span = { started, finished: Math.max(lastArrival, closed) };
    const events = await historyLength(bench, submission.batches[0]!.workflowId);
    const row = volumeRow(
      index ? 'redeliver-batch' : 'redeliver-batch-unindexed',
      messages,
      span,
      { before, after },
      { serverCpuMsPerMessage: bench.serverCpuMs() - serverBefore },
    );
    const lookup = index ? await lookups(redeliver, submission.deliveryIds) : undefined;
    return {
      ...row,
      eventsPerMessage: round(events / submission.batches[0]!.messages, 3),
      acceptedSeconds: round(acceptedSeconds, 3),
      ...(lookup && { lookup }),
    };
  });
}

/**
 * When the last of the batches closed, as the server recorded it (epoch ms; the server runs on this machine's
 * clock): the poll that waited for them notices up to its interval and a visibility query later.
 */
async function lastClose(bench: BenchServer, batches: readonly { workflowId: string }[]): Promise<number> {
  const closes = await Promise.all(batches.map((b) => bench.client.workflow.getHandle(b.workflowId).describe()));
  return Math.max(...closes.map((d) => d.closeTime!.getTime()));
}

/** LOOKUPS messages spread over the run, each found by its id (`status()`) as delivered in its batch. */
async function lookups(redeliver: Redeliver, ids: readonly string[]): Promise<LookupFigures> {
  const times: number[] = [];
  for (let i = 0; i < LOOKUPS; i++) {
    const id = ids[Math.floor((i * ids.length) / LOOKUPS)]!;
    const t = performance.now();
    const status = await redeliver.getHandle(id).status();
    times.push(performance.now() - t);
    if (status.state !== 'delivered' || !status.batch) throw new Error(`lookup of ${id}: ${status.state}, batch ${status.batch?.batchId}`);
  }
  times.sort((a, b) => a - b);
  // as the batches carry it: each its own index (batches of 500)
  let bytes = 0;
  for (let i = 0; i < ids.length; i += 500)
    bytes += indexAttributes(ids.slice(i, i + 500)).reduce((n, pair) => n + JSON.stringify(pair.value).length, 0);
  return {
    lookups: LOOKUPS,
    p50Ms: round(quantile(times, 0.5)),
    maxMs: round(times.at(-1)!),
    indexBytesPerMessage: round(bytes / ids.length, 1),
  };
}

/** The same messages, one workflow each (Redeliver.submitMany): what a batch is measured against. */
export async function redeliverSingleVolume(bench: BenchServer, sink: FlakyEndpoint, messages: number): Promise<RedeliverVolumeRow> {
  return withWorker(bench, 'single', {}, async (redeliver, worker, taskQueue) => {
    const pathname = `/volume/${taskQueue}`;
    const inputs = Array.from({ length: messages }, (_, i) => benchMessage(sink.url, pathname, i));
    const before = await worker.stats();
    const serverBefore = bench.serverCpuMs();
    const started = Date.now();
    const handles = await redeliver.submitMany(inputs, undefined, 64);
    const closed = await waitForCount(
      bench.client,
      `WorkflowType = 'deliveryWorkflow' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`,
      messages,
      30 * 60_000,
    );
    const after = await worker.stats();
    const events = await historyLength(bench, handles[0]!.deliveryId);
    const row = volumeRow(
      'redeliver-single',
      messages,
      { started, finished: closed },
      { before, after },
      {
        serverCpuMsPerMessage: bench.serverCpuMs() - serverBefore,
      },
    );
    return { ...row, eventsPerMessage: events };
  });
}

export interface LatencyRow {
  /** Messages a second the producer offered, one at a time, through the batcher. */
  offeredPerSecond: number;
  messages: number;
  /** From each `batcher.submit` call to the message's arrival at the sink, ms. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Messages a second that reached the sink over the run. */
  deliveredPerSecond: number;
  /** Where the CPU went, per message: the producer (validation, the batcher), the worker, the dev server; and batches started. */
  producerCpuMsPerMessage: number;
  workerCpuMsPerMessage: number;
  serverCpuMsPerMessage: number;
  batches: number;
  /** The worker's RSS (MB) after each tenth of the run, and its peak: memory while the messages pass through. */
  workerRssMb: number[];
  workerPeakRssMb: number;
  /** The same rate first, on the fresh worker and producer, measured apart: their first seconds. */
  warmUp?: Latencies & { seconds: number };
}

/**
 * Latency through the batcher at a steady offered rate: a producer in its own process (producer-process.ts)
 * hands over one message at a time, and each message's submit time is compared with its arrival at the sink.
 * A fresh worker and producer first run `warmUpSeconds` at the same rate, measured apart (`warmUp`): their
 * first seconds are slower (informal probes at 1,000/s: each of the first seconds' slowest 1.2–2.7 s after the
 * fastest, the backlog drained after 4–9 s, then within 120–250 ms), and a worker in production is past them.
 */
export async function batcherLatency(
  bench: BenchServer,
  sink: FlakyEndpoint,
  perSecond: number,
  seconds: number,
  warmUpSeconds = 0,
): Promise<LatencyRow> {
  return withWorker(bench, 'latency', {}, async (_redeliver, worker, taskQueue) => {
    const producer = await forkWorkerProcess('producer-process.js', [bench.server.address, taskQueue]);
    try {
      const warmUp = warmUpSeconds
        ? await produceAndMeasure(sink, producer, `/warm-up/${taskQueue}`, perSecond, perSecond * warmUpSeconds)
        : null;
      const pathname = `/volume/${taskQueue}`;
      const messages = perSecond * seconds;
      const before = { producer: await producer.stats(), worker: await worker.stats(), server: bench.serverCpuMs() };
      const batchesBefore = await batchesOn(bench, taskQueue);
      const workerRssMb: number[] = [];
      const sampling = setInterval(() => void worker.stats().then((stats) => workerRssMb.push(mb(stats.rss))), seconds * 100);
      const run = await produceAndMeasure(sink, producer, pathname, perSecond, messages).finally(() => clearInterval(sampling));
      const after = { producer: await producer.stats(), worker: await worker.stats(), server: bench.serverCpuMs() };
      const perMessage = (ms: number) => round(ms / messages, 3);
      return {
        offeredPerSecond: perSecond,
        messages,
        ...run,
        producerCpuMsPerMessage: perMessage(after.producer.cpuMs - before.producer.cpuMs),
        workerCpuMsPerMessage: perMessage(after.worker.cpuMs - before.worker.cpuMs),
        serverCpuMsPerMessage: perMessage(after.server - before.server),
        batches: (await batchesOn(bench, taskQueue)) - batchesBefore,
        workerRssMb,
        workerPeakRssMb: mb(after.worker.peakRss),
        ...(warmUp && { warmUp: { seconds: warmUpSeconds, ...warmUp } }),
      };
    } finally {
      await producer.stop();
    }
  });
}

type Latencies = Pick<LatencyRow, 'p50Ms' | 'p99Ms' | 'maxMs' | 'deliveredPerSecond'>;

/** One run of the producer at a steady rate to `pathname`: each message's latency, submit to arrival at the sink. */
async function produceAndMeasure(
  sink: FlakyEndpoint,
  producer: WorkerProcess,
  pathname: string,
  perSecond: number,
  messages: number,
): Promise<Latencies> {
  const delivered = waitForDelivered(sink, pathname, messages, 60_000 + messages * 20);
  delivered.catch(() => undefined);
  const { submittedAt } = await runProducer(producer, { sinkUrl: sink.url, path: pathname, perSecond, messages });
  const last = await delivered;
  const latencies = sink.received
    .filter((r) => r.path === pathname && r.messageId)
    .map((r) => r.at - submittedAt[Number(r.messageId!.slice(1))]!)
    .sort((a, b) => a - b);
  return {
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.at(-1)!,
    deliveredPerSecond: round(messages / ((last - submittedAt[0]!) / 1000), 1),
  };
}

/** One run of the producer process: its answer, or an error if it failed or exited (else the benchmark would wait forever). */
export async function runProducer(producer: WorkerProcess, run: ProduceRun): Promise<Produced> {
  type Answer = Partial<Produced> & { error?: string };
  const answer = await new Promise<Answer>((resolve) => {
    const answered = (m: unknown) => {
      producer.child.off('exit', exited);
      resolve(m as Answer);
    };
    const exited = (code: number | null, signal: string | null) => {
      producer.child.off('message', answered);
      resolve({ error: `exited (${signal ?? code}) before answering` });
    };
    producer.child.once('message', answered).once('exit', exited);
    producer.child.send(run);
  });
  if (!answer.submittedAt || answer.acceptedAt === undefined) throw new Error(`producer: ${answer.error ?? 'no answer'}`);
  return { submittedAt: answer.submittedAt, acceptedAt: answer.acceptedAt };
}

const batchesOn = async (bench: BenchServer, taskQueue: string) =>
  (await bench.client.workflow.count(`WorkflowType = 'batchWorkflow' AND TaskQueue = '${taskQueue}'`)).count;

async function withWorker<R>(
  bench: BenchServer,
  name: string,
  options: Pick<RedeliverOptions, 'messageIndex'>,
  run: (redeliver: Redeliver, worker: WorkerProcess, taskQueue: string) => Promise<R>,
): Promise<R> {
  const taskQueue = `vol-${name}-${randomUUID().slice(0, 6)}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  try {
    return await run(new Redeliver(bench.client, { taskQueue, ...options }), worker, taskQueue);
  } finally {
    await worker.stop();
  }
}

async function historyLength(bench: BenchServer, workflowId: string): Promise<number> {
  const history = await bench.client.workflow.getHandle(workflowId).fetchHistory();
  return history.events?.length ?? 0;
}
