import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import type { Jitter } from '../src/policy/types';
import { DeliveryState } from '../src/contract';
import { pool, round, startWorkerProcess, waitForCount, type BenchServer } from './harness';

export interface StormRow {
  jitter: Jitter;
  /** The per-endpoint retry budget: on = the default 10 retries/s with a burst of 20. */
  budget: 'on' | 'off';
  /** The endpoint's circuit breaker (docs/endpoint-health.md): on = the default, one probe a second while failing. Absent: off (rows from before it). */
  breaker?: 'on' | 'off';
  deliveries: number;
  downSeconds: number;
  requestsWhileDown: number;
  peakPerSecondWhileDown: number;
  peakPerSecondAfterRecovery: number;
  secondsUntilAllDelivered: number;
  /** Requests per second, second by second from the start (for the plot). */
  perSecond: number[];
}

/** Each jitter strategy without the retry budget, then the two extremes with it, then with it and the circuit breaker. */
const RUNS: { jitter: Jitter; budget: StormRow['budget']; breaker: 'on' | 'off' }[] = [
  ...(['full', 'equal', 'decorrelated', 'none'] as const).map((jitter) => ({ jitter, budget: 'off' as const, breaker: 'off' as const })),
  ...(['full', 'none'] as const).map((jitter) => ({ jitter, budget: 'on' as const, breaker: 'off' as const })),
  ...(['full', 'none'] as const).map((jitter) => ({ jitter, budget: 'on' as const, breaker: 'on' as const })),
];

/**
 * N deliveries, all due at the same instant (started with a common start delay, as when an endpoint fails
 * under a full pipeline), to an endpoint that is down for a while and then comes back; one run after the
 * other on a fresh worker: each jitter strategy without the per-endpoint retry budget, then `full` and
 * `none` with the default budget (10 retries/s, burst 20). Measured: the endpoint's request rate over
 * time, the peak after recovery and the time until all are delivered. Each run has a task queue, a worker
 * and so an endpoint workflow of its own, as a deployment would: the one worker takes the whole 10/s.
 */
export async function retryStorm(bench: BenchServer, sink: FlakyEndpoint, deliveries: number, downMs: number): Promise<StormRow[]> {
  const rows: StormRow[] = [];
  for (const { jitter, budget, breaker } of RUNS) {
    const taskQueue = `storm-${jitter}-budget-${budget}-breaker-${breaker}-${randomUUID().slice(0, 6)}`;
    const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue, { retryBudget: budget === 'on' });
    const redeliver = new Redeliver(bench.client, { taskQueue });
    const path = `/storm-${taskQueue}`;
    // the breaker is on by default: the rows without it (the budget alone) turn it off for their endpoint
    await redeliver.endpoint(sink.url).set({ breaker });
    sink.setDown(path, true);
    // every delivery starts at t0: submitting 1,000 takes ~20 s here, so t0 lies beyond that
    const t0 = Date.now() + 5_000 + deliveries * 30;
    try {
      await pool(
        Array.from({ length: deliveries }, (_, i) => i),
        64,
        async (i) => {
          const delivery = redeliver.validate({
            kind: 'event',
            tenant: 'bench',
            device: taskQueue,
            messageId: `m${i}`,
            payload: { i },
            target: `${sink.url}${path}`,
            policy: { jitter },
          });
          await bench.client.workflow.start('deliveryWorkflow', {
            taskQueue,
            workflowId: delivery.deliveryId,
            args: [{ delivery }],
            startDelay: Math.max(1, t0 - Date.now()),
            typedSearchAttributes: [{ key: DeliveryState, value: 'pending' }],
          });
        },
      );
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + downMs - Date.now())));
      const recovered = Date.now();
      sink.setDown(path, false);
      const doneAt = await waitForCount(
        bench.client,
        `TaskQueue = '${taskQueue}' AND DeliveryState = 'delivered'`,
        deliveries,
        30 * 60_000,
      );
      const hits = sink.received.filter((r) => r.path === path);
      const lastSecond = Math.ceil((Math.max(...hits.map((h) => h.at)) - t0) / 1000);
      const perSecond = Array.from({ length: lastSecond + 1 }, () => 0);
      for (const h of hits) perSecond[Math.max(0, Math.floor((h.at - t0) / 1000))]!++;
      const downSeconds = Math.floor((recovered - t0) / 1000);
      rows.push({
        jitter,
        budget,
        breaker,
        deliveries,
        downSeconds,
        requestsWhileDown: hits.filter((h) => h.at < recovered).length,
        peakPerSecondWhileDown: Math.max(...perSecond.slice(0, downSeconds)),
        peakPerSecondAfterRecovery: Math.max(...perSecond.slice(downSeconds)),
        secondsUntilAllDelivered: round((doneAt - recovered) / 1000, 1),
        perSecond,
      });
      console.log(
        `  storm ${jitter}, budget ${budget}, breaker ${breaker}: ${rows.at(-1)!.requestsWhileDown} requests while down, peak after recovery ${rows.at(-1)!.peakPerSecondAfterRecovery}/s, all delivered after ${rows.at(-1)!.secondsUntilAllDelivered} s`,
      );
    } finally {
      await worker.stop();
    }
  }
  return rows;
}
