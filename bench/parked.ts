import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { mb, pool, round, startWorkerProcess, waitForCount, type BenchServer } from './harness';

export interface ParkedRow {
  parked: number;
  workerRssMb: number;
  serverRssMb: number;
  /** Submissions per second while filling up to this level. */
  fillPerSecond: number;
}

/**
 * How many deliveries can wait at once: fill up in steps (each delivery fails once, then waits an hour on a
 * durable timer), with the worker's and the dev server's memory at each level, until the levels are done or
 * the time budget runs out.
 */
export async function parkedCapacity(bench: BenchServer, sink: FlakyEndpoint, levels: number[], budgetMs: number): Promise<ParkedRow[]> {
  const taskQueue = `parked-${randomUUID().slice(0, 6)}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  const redeliver = new Redeliver(bench.client, { taskQueue });
  const rows: ParkedRow[] = [];
  const deadline = Date.now() + budgetMs;
  let parked = 0;
  try {
    for (const level of levels) {
      if (Date.now() > deadline) break;
      const started = Date.now();
      await pool(
        Array.from({ length: level - parked }, (_, i) => parked + i),
        64,
        (i) =>
          redeliver.submit({
            kind: 'event',
            tenant: 'bench',
            device: 'parked',
            messageId: `m${i}`,
            payload: { i },
            target: `${sink.url}/parked?fail=9&status=503`,
            policy: { jitter: 'none', initial: '1h', min: '1h', max: '1h' },
          }),
      );
      const query = `TaskQueue = '${taskQueue}' AND DeliveryState = 'waiting'`;
      const reached = await waitForCount(bench.client, query, level, Math.max(60_000, deadline - Date.now())).then(
        () => level,
        // the budget ran out before this level: report the largest count reached, and stop
        async () => (await bench.client.workflow.count(query)).count,
      );
      const fillSeconds = (Date.now() - started) / 1000;
      const previous = parked;
      parked = reached;
      const stats = await worker.stats();
      rows.push({
        parked,
        workerRssMb: mb(stats.rss),
        serverRssMb: mb(bench.serverRss()),
        fillPerSecond: round((parked - previous) / fillSeconds, 1),
      });
      console.log(`  parked ${parked}: worker ${mb(stats.rss)} MB, server ${mb(bench.serverRss())} MB`);
      if (reached < level) break;
    }
  } finally {
    await worker.stop();
  }
  return rows;
}
