import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Redeliver } from '../src/client';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { round, startWorkerProcess, type BenchServer } from './harness';

export interface RetryCostRow {
  system: 'redeliver' | 'native activity retry' | 'workflow loop';
  attempts: number;
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
  const workers = [await startWorkerProcess('redeliver', bench.server.address, redeliverQueue), await startWorkerProcess('baseline', bench.server.address, baselineQueue)];
  try {
    const r = await new Redeliver(bench.client, { taskQueue: redeliverQueue }).submit({
      kind: 'event', tenant: 'bench', device: 'cost', messageId: randomUUID(), payload: { n: 1 }, target,
      policy: { jitter: 'full', initial: WAIT_MS, min: WAIT_MS / 2, max: WAIT_MS * 2 },
    });
    await r.result();
    rows.push(await measure(bench.client, 'redeliver', r.deliveryId));
    for (const [system, workflowType] of [['native activity retry', 'nativeRetryDelivery'], ['workflow loop', 'loopDelivery']] as const) {
      const id = `${system}/${randomUUID()}`;
      const handle = await bench.client.workflow.start(workflowType, { taskQueue: baselineQueue, workflowId: id, args: [target, '{"n":1}', id, WAIT_MS] });
      await handle.result();
      rows.push(await measure(bench.client, system, id));
    }
  } finally {
    for (const w of workers) await w.stop();
  }
  return rows;
}

async function measure(client: Client, system: RetryCostRow['system'], workflowId: string): Promise<RetryCostRow> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const workflowTasks = events.filter((e) => e.workflowTaskCompletedEventAttributes).length;
  // server-side activity retries leave no event per attempt: the last start records the attempt number
  const attempts = Math.max(
    events.filter((e) => e.activityTaskStartedEventAttributes).length,
    ...events.map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0),
  );
  // each workflow task and each activity attempt is a poll and a response; plus the client's start
  const roundTrips = 2 * workflowTasks + 2 * attempts + 1;
  return {
    system,
    attempts,
    historyEvents: events.length,
    eventsPerRetry: round(events.length / (attempts - 1), 2),
    roundTripsPerAttempt: round(roundTrips / attempts, 2),
  };
}
