import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { round, startWorkerProcess, type BenchServer } from './harness';

export interface RetryCostRow {
  system: 'redeliver' | 'native activity retry' | 'workflow loop';
  /** Attempts that reached the endpoint. */
  attempts: number;
  /** Activity task executions: for redeliver more than the attempts (retries that only wait). */
  activityExecutions: number;
  historyEvents: number;
  eventsPerRetry: number;
  roundTripsPerAttempt: number;
}

const ATTEMPTS = 10;
const WAIT_MS = 100;

/** A delivery that needs 10 attempts: history events and worker–server round trips it costs, per system. */
export async function retryCost(bench: BenchServer, sink: FlakyEndpoint): Promise<RetryCostRow[]> {
  const rows: RetryCostRow[] = [];
  const target = `${sink.url}/cost?fail=${ATTEMPTS - 1}&status=503`;
  const redeliverQueue = `cost-r-${randomUUID().slice(0, 6)}`;
  const baselineQueue = `cost-b-${randomUUID().slice(0, 6)}`;
  const workers = [
    await startWorkerProcess('redeliver', bench.server.address, redeliverQueue),
    await startWorkerProcess('baseline', bench.server.address, baselineQueue),
  ];
  try {
    const r = await new Redeliver(bench.client, { taskQueue: redeliverQueue }).submit({
      kind: 'event',
      tenant: 'bench',
      device: 'cost',
      messageId: randomUUID(),
      payload: { n: 1 },
      target,
      policy: { jitter: 'full', initial: WAIT_MS, min: WAIT_MS / 2, max: WAIT_MS * 2 },
    });
    const { attempts } = await r.result();
    rows.push(await measure(bench.client, 'redeliver', r.deliveryId, attempts));
    for (const [system, workflowType] of [
      ['native activity retry', 'nativeRetryDelivery'],
      ['workflow loop', 'loopDelivery'],
    ] as const) {
      const id = `${system}/${randomUUID()}`;
      const handle = await bench.client.workflow.start(workflowType, {
        taskQueue: baselineQueue,
        workflowId: id,
        args: [target, '{"n":1}', id, WAIT_MS],
      });
      await handle.result();
      rows.push(await measure(bench.client, system, id));
    }
  } finally {
    for (const w of workers) await w.stop();
  }
  return rows;
}

/**
 * History events and round trips of a finished workflow. Activity executions: each activity's final
 * ActivityTaskStarted carries its attempt number (server-side retries leave no event per execution). For
 * redeliver that is the first `sendAttempt` plus every execution of `retryDelivery`, those that only wait
 * (for the planned time, or for the retry budget) included; its attempts come from the delivery's result.
 * For the baselines every execution is an attempt.
 */
async function measure(
  client: Client,
  system: RetryCostRow['system'],
  workflowId: string,
  deliveryAttempts?: number,
): Promise<RetryCostRow> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const workflowTasks = events.filter((e) => e.workflowTaskCompletedEventAttributes).length;
  const started = events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes] : []));
  const executions =
    deliveryAttempts === undefined
      ? Math.max(started.length, ...started.map((a) => a.attempt ?? 0))
      : started.reduce((sum, a) => sum + (a.attempt ?? 1), 0);
  const attempts = deliveryAttempts ?? executions;
  // each workflow task and each activity execution is a poll and a response; plus the client's start
  const roundTrips = 2 * workflowTasks + 2 * executions + 1;
  if (system === 'redeliver') console.log(`  cost per retry, redeliver: ${events.length} events: ${eventNames(events).join(' ')}`);
  return {
    system,
    attempts,
    activityExecutions: executions,
    historyEvents: events.length,
    eventsPerRetry: round(events.length / (attempts - 1), 2),
    roundTripsPerAttempt: round(roundTrips / attempts, 2),
  };
}

/** Event types in order, short (ActivityTaskScheduled, not EVENT_TYPE_ACTIVITY_TASK_SCHEDULED). */
function eventNames(events: temporal.api.history.v1.IHistoryEvent[]): string[] {
  return events.map((e) =>
    temporal.api.enums.v1.EventType[e.eventType ?? 0]!.replace(/^EVENT_TYPE_/, '')
      .toLowerCase()
      .replace(/(^|_)(\w)/g, (_, __: string, c: string) => c.toUpperCase()),
  );
}
