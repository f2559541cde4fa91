import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { bullmqVolume } from './bullmq';
import { forkWorkerProcess, type BenchServer, type WorkerProcess } from './harness';
import type { LookupFigures } from './redeliver-volume';
import type { LoadRun } from './load-process';
import { batcherLatency, redeliverBatchVolume, redeliverSingleVolume, type LatencyRow } from './redeliver-volume';
import { volumeRow, type VolumeRow } from './volume-row';

export type { VolumeRow } from './volume-row';

/** Connections of the plain client that measures the sink alone: past BullMQ's 50 jobs in flight. */
export const SINK_LOAD_CONNECTIONS = 100;

/**
 * Messages that succeed at once, delivered end to end by each system to the same sink, per size; and the
 * sink alone under a plain client, to show the sink is not what limits the others.
 */
export interface VolumeSizes {
  /** Messages per run of every system. */
  messages: number[];
  /** redeliver with one workflow per message: fewer, it is slow. */
  single: number;
  /**
   * For the worker's memory (0: none): a batch run of this many submitted at once (the worker holds them all),
   * and as many offered through the batcher at 1,000/s (passing through: its RSS sampled along the way).
   */
  memory: number;
  /**
   * The batcher's latency: offered messages a second (one run each), for so many seconds, after as many
   * seconds at the same rate to warm the fresh worker and producer up (measured and reported apart).
   */
  latency: { perSecond: number[]; seconds: number; warmUpSeconds: number };
}

export interface FindabilityResults {
  indexed: (VolumeRow & { lookup: LookupFigures })[];
  unindexed: VolumeRow[];
}

export interface VolumeResults {
  rows: VolumeRow[];
  /** Batches with their message index against the same without it (absent from runs before it was measured). */
  findability?: FindabilityResults;
  latency: LatencyRow[];
  /** `memory` messages through the batcher at MEMORY_PER_SECOND. */
  streamed?: LatencyRow;
}

/** The offered rate of the streamed memory run: the latency target's. */
const MEMORY_PER_SECOND = 1_000;

export async function volume(bench: BenchServer, sink: FlakyEndpoint, sizes: VolumeSizes): Promise<VolumeResults> {
  const rows: VolumeRow[] = [];
  const run = async (what: string, measure: () => Promise<VolumeRow>) => {
    rows.push(await measure());
    console.log(`  volume ${what} ${rows.at(-1)!.messages}: ${rows.at(-1)!.perSecond}/s`);
    sink.received.length = 0;
  };
  await run('redeliver-single', () => redeliverSingleVolume(bench, sink, sizes.single));
  for (const n of sizes.messages) {
    rows.push(await sinkAlone(sink, n));
    console.log(`  volume sink-alone ${n}: ${rows.at(-1)!.perSecond}/s`);
    rows.push(await bullmqVolume(sink, n));
    console.log(`  volume bullmq ${n}: ${rows.at(-1)!.perSecond}/s`);
    sink.received.length = 0;
    await run('redeliver-batch', () => redeliverBatchVolume(bench, sink, n));
  }
  const findability = await findabilityRuns(bench, sink, sizes.messages.at(-1)!);
  if (sizes.memory) await run('redeliver-batch (memory)', () => redeliverBatchVolume(bench, sink, sizes.memory));
  const latency: LatencyRow[] = [];
  for (const rate of sizes.latency.perSecond) {
    latency.push(await batcherLatency(bench, sink, rate, sizes.latency.seconds, sizes.latency.warmUpSeconds));
    console.log(`  volume latency at ${rate}/s: p50 ${latency.at(-1)!.p50Ms} ms, p99 ${latency.at(-1)!.p99Ms} ms`);
    sink.received.length = 0;
  }
  if (!sizes.memory) return { rows, latency, findability };
  const streamed = await batcherLatency(bench, sink, MEMORY_PER_SECOND, sizes.memory / MEMORY_PER_SECOND);
  console.log(`  volume ${sizes.memory} through the batcher: worker RSS ${streamed.workerRssMb.join(', ')} MB`);
  sink.received.length = 0;
  return { rows, latency, streamed, findability };
}

/** Runs of each in the findability comparison, alternating (off, on, on, off, off, on) so that drift cancels. */
const FINDABILITY_PAIRS = 3;

/**
 * Findability by id (issue 29): the same batches with their message index and without it (docs/batches.md,
 * "Finding a message by its id"), FINDABILITY_PAIRS runs each in alternating order, and lookups by id after the
 * indexed runs.
 */
async function findabilityRuns(bench: BenchServer, sink: FlakyEndpoint, messages: number): Promise<FindabilityResults> {
  const indexed: FindabilityResults['indexed'] = [];
  const unindexed: VolumeRow[] = [];
  for (let pair = 0; pair < FINDABILITY_PAIRS; pair++) {
    for (const index of pair % 2 === 0 ? [false, true] : [true, false]) {
      const row = await redeliverBatchVolume(bench, sink, messages, { index });
      (index ? indexed : unindexed).push(row as FindabilityResults['indexed'][number]);
      console.log(`  volume findability ${index ? 'indexed' : 'unindexed'} ${messages}: ${row.perSecond}/s`);
      sink.received.length = 0;
    }
  }
  return { indexed, unindexed };
}

/**
 * The sink alone: `messages` POSTs from a plain undici client (load-process.ts) with SINK_LOAD_CONNECTIONS
 * keep-alive connections, after an uncounted warm-up (else a small run measures the client's JIT, not the
 * sink). The worker columns are the load generator's; the sink's own CPU per POST is this process's
 * (which serves the sink) over the run.
 */
export async function sinkAlone(sink: FlakyEndpoint, messages: number): Promise<VolumeRow> {
  const load = await forkWorkerProcess('load-process.js', [sink.url, String(SINK_LOAD_CONNECTIONS)]);
  try {
    await runLoad(load, { path: '/volume/sink-alone-warm-up', messages: 5_000 });
    const before = await load.stats();
    const cpuBefore = process.cpuUsage();
    const seconds = await runLoad(load, { path: `/volume/sink-alone-${messages}`, messages });
    const sinkCpu = process.cpuUsage(cpuBefore);
    const after = await load.stats();
    const span = { started: 0, finished: seconds * 1000 };
    return volumeRow('sink-alone', messages, span, { before, after }, { sinkCpuMsPerMessage: (sinkCpu.user + sinkCpu.system) / 1000 });
  } finally {
    await load.stop();
  }
}

async function runLoad(load: WorkerProcess, run: LoadRun): Promise<number> {
  const answer = await new Promise<{ seconds?: number; error?: string }>((resolve) => {
    load.child.once('message', (m) => resolve(m as { seconds?: number; error?: string }));
    load.child.send(run);
  });
  if (answer.seconds === undefined) throw new Error(`sink alone: ${answer.error ?? 'no answer'}`);
  return answer.seconds;
}
