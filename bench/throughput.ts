import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { pool, round, mb, startWorkerProcess, waitForCount, type BenchServer } from './harness';

export interface ThroughputRow {
  system: 'redeliver' | 'baseline';
  deliveries: number;
  seconds: number;
  perSecond: number;
  workerCpuMsPerDelivery: number;
  workerPeakRssMb: number;
}

/**
 * First-attempt success to a local sink: deliveries per second from the first submit until the last
 * workflow closed, for redeliver and for the bare baseline (one workflow, one activity, the same POST).
 */
export async function throughput(bench: BenchServer, sink: FlakyEndpoint, sizes: number[]): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const n of sizes) {
    for (const system of ['baseline', 'redeliver'] as const) {
      const taskQueue = `tp-${system}-${n}-${randomUUID().slice(0, 6)}`;
      const worker = await startWorkerProcess(system, bench.server.address, taskQueue);
      const before = await worker.stats();
      const started = Date.now();
      const ids = Array.from({ length: n }, (_, i) => `m${i}`);
      const redeliver = new Redeliver(bench.client, { taskQueue });
      await pool(ids, 64, async (id) => {
        if (system === 'redeliver') {
          await redeliver.submit({
            kind: 'event',
            tenant: 'bench',
            device: taskQueue,
            messageId: id,
            payload: { id },
            target: `${sink.url}/tp`,
          });
        } else {
          await bench.client.workflow.start('bareDelivery', {
            taskQueue,
            workflowId: `${taskQueue}/${id}`,
            args: [`${sink.url}/tp`, JSON.stringify({ id }), id],
          });
        }
      });
      const finished = await waitForCount(bench.client, `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`, n, 30 * 60_000);
      const after = await worker.stats();
      await worker.stop();
      const seconds = (finished - started) / 1000;
      rows.push({
        system,
        deliveries: n,
        seconds: round(seconds, 2),
        perSecond: round(n / seconds, 1),
        workerCpuMsPerDelivery: round((after.cpuMs - before.cpuMs) / n, 2),
        workerPeakRssMb: mb(after.peakRss),
      });
      console.log(`  throughput ${system} ${n}: ${round(n / seconds, 1)}/s`);
    }
  }
  return rows;
}
