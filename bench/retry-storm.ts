import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import type { Jitter } from '../src/policy/types';
import { pool, round, startWorkerProcess, waitForCount, type BenchServer } from './harness';

export interface StormRow {
  jitter: Jitter;
  deliveries: number;
  downSeconds: number;
  requestsWhileDown: number;
  peakPerSecondWhileDown: number;
  peakPerSecondAfterRecovery: number;
  secondsUntilAllDelivered: number;
  /** Requests per second, second by second from the start (for the plot). */
  perSecond: number[];
}

/**
 * N deliveries to an endpoint that is down for a while and then comes back, per jitter strategy (run side
 * by side on paths of their own): the endpoint's request rate over time, the peak after recovery and the
 * time until all are delivered.
 */
export async function retryStorm(bench: BenchServer, sink: FlakyEndpoint, deliveries: number, downMs: number): Promise<StormRow[]> {
  const strategies: Jitter[] = ['full', 'equal', 'decorrelated', 'none'];
  const taskQueue = `storm-${randomUUID().slice(0, 6)}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  const redeliver = new Redeliver(bench.client, { taskQueue });
  const pathOf = (j: Jitter) => `/storm-${taskQueue}-${j}`;
  for (const j of strategies) sink.setDown(pathOf(j), true);
  const started = Date.now();
  try {
    await pool(
      strategies.flatMap((jitter) => Array.from({ length: deliveries }, (_, i) => ({ jitter, i }))),
      64,
      ({ jitter, i }) => redeliver.submit({ kind: 'event', tenant: 'bench', device: `storm-${jitter}`, messageId: `${taskQueue}-${i}`, payload: { i }, target: `${sink.url}${pathOf(jitter)}`, policy: { jitter } }),
    );
    await new Promise((r) => setTimeout(r, Math.max(0, started + downMs - Date.now())));
    const recovered = Date.now();
    for (const j of strategies) sink.setDown(pathOf(j), false);
    const rows: StormRow[] = [];
    const doneAt = new Map<Jitter, number>();
    await Promise.all(
      strategies.map(async (j) => doneAt.set(j, await waitForCount(bench.client, `TaskQueue = '${taskQueue}' AND Device = 'storm-${j}' AND DeliveryState = 'delivered'`, deliveries, 30 * 60_000))),
    );
    for (const j of strategies) {
      const hits = sink.received.filter((r) => r.path === pathOf(j));
      const lastSecond = Math.ceil((Math.max(...hits.map((h) => h.at)) - started) / 1000);
      const perSecond = Array.from({ length: lastSecond + 1 }, () => 0);
      for (const h of hits) perSecond[Math.floor((h.at - started) / 1000)]!++;
      const downSeconds = Math.floor((recovered - started) / 1000);
      rows.push({
        jitter: j,
        deliveries,
        downSeconds,
        requestsWhileDown: hits.filter((h) => h.at < recovered).length,
        peakPerSecondWhileDown: Math.max(...perSecond.slice(Math.min(5, downSeconds), downSeconds)),
        peakPerSecondAfterRecovery: Math.max(...perSecond.slice(downSeconds)),
        secondsUntilAllDelivered: round((doneAt.get(j)! - recovered) / 1000, 1),
        perSecond,
      });
    }
    return rows;
  } finally {
    await worker.stop();
  }
}
