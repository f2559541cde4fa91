import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { pool, quantile, round, startWorkerProcess, type BenchServer } from './harness';

export interface TimerPrecisionRow {
  waiting: number;
  /** TimerFired − (TimerStarted + duration): the server's own lateness. */
  timerP50Ms: number;
  timerP99Ms: number;
  timerMaxMs: number;
  /** Arrival of the retry at the endpoint − its planned time: what a receiver sees. */
  retryP50Ms: number;
  retryP99Ms: number;
  retryMaxMs: number;
}

/**
 * N deliveries fail once and wait at the same time (full jitter over a 30 s window, so wake-ups spread as
 * in real use); each retry's lateness against its planned time, at the server and at the endpoint.
 */
export async function timerPrecision(bench: BenchServer, sink: FlakyEndpoint, counts: number[], windowMs = 30_000): Promise<TimerPrecisionRow[]> {
  const rows: TimerPrecisionRow[] = [];
  for (const n of counts) {
    const taskQueue = `timer-${n}-${randomUUID().slice(0, 6)}`;
    const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
    const redeliver = new Redeliver(bench.client, { taskQueue });
    const path = `/timer-${taskQueue}`;
    const handles = await pool(Array.from({ length: n }, (_, i) => i), 64, (i) =>
      redeliver.submit({
        kind: 'event', tenant: 'bench', device: taskQueue, messageId: `m${i}`, payload: { i },
        target: `${sink.url}${path}?fail=1&status=503`,
        policy: { jitter: 'full', initial: windowMs, min: 1_000, max: windowMs },
      }),
    );
    await pool(handles, 64, (h) => h.result());
    await worker.stop();
    const timer: number[] = [];
    const retry: number[] = [];
    await pool(handles, 32, async (h) => {
      const events = (await h.workflow.fetchHistory()).events ?? [];
      const started = events.find((e) => e.timerStartedEventAttributes);
      const fired = events.find((e) => e.timerFiredEventAttributes);
      if (!started || !fired) throw new Error(`${h.deliveryId}: no timer`);
      const d = started.timerStartedEventAttributes!.startToFireTimeout!;
      const planned = ms(started.eventTime) + Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6);
      timer.push(ms(fired.eventTime) - planned);
      const arrival = sink.received.find((r) => r.path === path && r.messageId === h.workflow.workflowId.split('/').pop() && r.attempt === 2);
      if (arrival) retry.push(arrival.at - planned);
    });
    timer.sort((a, b) => a - b);
    retry.sort((a, b) => a - b);
    rows.push({
      waiting: n,
      timerP50Ms: quantile(timer, 0.5), timerP99Ms: quantile(timer, 0.99), timerMaxMs: timer[timer.length - 1]!,
      retryP50Ms: quantile(retry, 0.5), retryP99Ms: quantile(retry, 0.99), retryMaxMs: retry[retry.length - 1]!,
    });
    console.log(`  timer precision ${n}: retry p99 ${round(quantile(retry, 0.99), 0)} ms`);
  }
  return rows;
}

function ms(t: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(t?.seconds ?? 0) * 1000 + Math.round((t?.nanos ?? 0) / 1e6);
}
