import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { mb, round, type WorkerStats } from './harness';

/** One system's run in the volume benchmark (bench/volume.ts). */
export interface VolumeRow {
  system: 'bullmq' | 'pg-boss' | 'sink-alone' | 'redeliver-batch' | 'redeliver-batch-unindexed' | 'redeliver-single';
  messages: number;
  seconds: number;
  perSecond: number;
  /** The process that POSTs (for sink-alone, the load generator). */
  workerCpuMsPerMessage: number;
  workerPeakRssMb: number;
  /** The queue's server (redis-server for BullMQ, the Temporal dev server for redeliver), where measured. */
  serverCpuMsPerMessage?: number;
  /** sink-alone: the sink's own CPU per POST, so its capacity on one core is about 1,000 ÷ this per second. */
  sinkCpuMsPerMessage?: number;
  /** redeliver: history events per message delivered at once (a batch's events ÷ its messages; a delivery's events). */
  eventsPerMessage?: number;
}

/** A row from a run's span (epoch ms) and its worker's stats before and after. */
export function volumeRow(
  system: VolumeRow['system'],
  messages: number,
  span: { started: number; finished: number },
  worker: { before: WorkerStats; after: WorkerStats },
  extra: Pick<VolumeRow, 'serverCpuMsPerMessage' | 'sinkCpuMsPerMessage'> = {},
): VolumeRow {
  const seconds = (span.finished - span.started) / 1000;
  const perMessage = (ms: number) => round(ms / messages, 3);
  return {
    system,
    messages,
    seconds: round(seconds, 2),
    perSecond: round(messages / seconds, 1),
    workerCpuMsPerMessage: perMessage(worker.after.cpuMs - worker.before.cpuMs),
    workerPeakRssMb: mb(worker.after.peakRss),
    ...(extra.serverCpuMsPerMessage !== undefined && { serverCpuMsPerMessage: round(extra.serverCpuMsPerMessage / messages, 3) }),
    ...(extra.sinkCpuMsPerMessage !== undefined && { sinkCpuMsPerMessage: round(extra.sinkCpuMsPerMessage / messages, 3) }),
  };
}

/**
 * Waits until the sink has answered a 2xx to `messages` distinct Message-Ids on `pathname`; returns when
 * the last of them arrived (the sink's own clock, epoch ms), not when this poll noticed.
 */
export async function waitForDelivered(sink: FlakyEndpoint, pathname: string, messages: number, timeoutMs: number): Promise<number> {
  const delivered = new Set<string>();
  const deadline = Date.now() + timeoutMs;
  let scanned = 0;
  let last = 0;
  for (;;) {
    for (; scanned < sink.received.length; scanned++) {
      const r = sink.received[scanned]!;
      if (r.path !== pathname || r.status < 200 || r.status >= 300 || !r.messageId || delivered.has(r.messageId)) continue;
      delivered.add(r.messageId);
      last = Math.max(last, r.at);
    }
    if (delivered.size >= messages) return last;
    if (Date.now() > deadline) throw new Error(`timed out: ${delivered.size} of ${messages} messages delivered to ${pathname}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
