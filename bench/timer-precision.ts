import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { retryTiming } from '../test/support/histories';
import { pool, quantile, round, startWorkerProcess, type BenchServer } from './harness';

export interface TimerPrecisionRow {
  waiting: number;
  /**
   * Start of the `retryDelivery` activity execution that sends attempt 2 (the eventTime of its final
   * ActivityTaskStarted) − the planned time of attempt 2: the server's own lateness in handing out the
   * activity retry. (Named `timer…` since deliveries waited on workflow timers; kept for comparison.)
   */
  timerP50Ms: number;
  timerP99Ms: number;
  timerMaxMs: number;
  /** Arrival of attempt 2 at the endpoint − its planned time: what a receiver sees. */
  retryP50Ms: number;
  retryP99Ms: number;
  retryMaxMs: number;
}

/**
 * N deliveries fail once and wait at the same time (full jitter over a 30 s window, so wake-ups spread as
 * in real use); each retry's lateness against its planned time, at the server and at the endpoint. The
 * wait is Temporal's own activity retry: the `retryDelivery` activity's first execution fails with
 * `nextRetryDelay` until the planned time, the next one sends attempt 2. The worker runs without the
 * per-endpoint retry budget: 1,000 wake-ups in 30 s are ~33/s to one endpoint, and the budget (10/s)
 * would hold some back on purpose; this measures the server's timing, not the budget.
 */
export async function timerPrecision(
  bench: BenchServer,
  sink: FlakyEndpoint,
  counts: number[],
  windowMs = 30_000,
): Promise<TimerPrecisionRow[]> {
  const rows: TimerPrecisionRow[] = [];
  for (const n of counts) {
    const taskQueue = `timer-${n}-${randomUUID().slice(0, 6)}`;
    const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue, { retryBudget: false });
    const redeliver = new Redeliver(bench.client, { taskQueue });
    const path = `/timer-${taskQueue}`;
    const handles = await pool(
      Array.from({ length: n }, (_, i) => i),
      64,
      (i) =>
        redeliver.submit({
          kind: 'event',
          tenant: 'bench',
          device: taskQueue,
          messageId: `m${i}`,
          payload: { i },
          target: `${sink.url}${path}?fail=1&status=503`,
          policy: { jitter: 'full', initial: windowMs, min: 1_000, max: windowMs },
        }),
    );
    await pool(handles, 64, (h) => h.result());
    await worker.stop();
    const server: number[] = [];
    const retry: number[] = [];
    const executions = new Map<number, number>();
    await pool(handles, 32, async (h) => {
      const { planned, started, runs } = await retryTiming(bench.client, h);
      executions.set(runs, (executions.get(runs) ?? 0) + 1);
      server.push(started - planned);
      const arrival = sink.received.find(
        (r) => r.path === path && r.messageId === h.workflow.workflowId.split('/').pop() && r.attempt === 2,
      );
      if (arrival) retry.push(arrival.at - planned);
    });
    server.sort((a, b) => a - b);
    retry.sort((a, b) => a - b);
    rows.push({
      waiting: n,
      timerP50Ms: quantile(server, 0.5),
      timerP99Ms: quantile(server, 0.99),
      timerMaxMs: server[server.length - 1]!,
      retryP50Ms: quantile(retry, 0.5),
      retryP99Ms: quantile(retry, 0.99),
      retryMaxMs: retry[retry.length - 1]!,
    });
    console.log(
      `  timer precision ${n}: activity start p99 ${round(quantile(server, 0.99), 0)} ms, retry at endpoint p99 ${round(quantile(retry, 0.99), 0)} ms`,
    );
    // 2 as planned (one execution waits, the next sends); 1: the first started after the planned time already (a busy server)
    if (executions.size > 1 || !executions.has(2))
      console.log(
        `  retryDelivery executions per delivery (executions: deliveries): ${[...executions]
          .sort(([a], [b]) => a - b)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')}`,
      );
  }
  return rows;
}
