import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { orderingWorkflowId } from '../src/contract';
import type { DeliveryInput } from '../src/delivery/types';
import { mb, pool, round, startWorkerProcess, waitForCount, type BenchServer } from './harness';

/** `ordered, 1 key`: every message on one key; `ordered, 100 keys`: spread over 100; `unordered`: no key (as before ordering). */
export type OrderingSystem = 'ordered, 1 key' | 'ordered, 100 keys' | 'unordered';

export interface OrderingRow {
  system: OrderingSystem;
  messages: number;
  seconds: number;
  perSecond: number;
  workerCpuMsPerMessage: number;
  serverCpuMsPerMessage: number;
  workerPeakRssMb: number;
  /** One delivery's history (the mean of a sample), and its key's sequencer's events per message. */
  deliveryEventsPerMessage: number;
  sequencerEventsPerMessage: number;
}

const SYSTEMS: OrderingSystem[] = ['unordered', 'ordered, 100 keys', 'ordered, 1 key'];
const SAMPLED_HISTORIES = 10;

/**
 * Messages that succeed at once to a local sink, submitted one call each (64 in flight, in order), ordered on one
 * key, on 100 keys, and without a key, each on a fresh worker process of its own: messages/s from the first
 * submit until the last delivery closed, CPU per message, and the history events of a delivery and of its key.
 */
export async function orderingThroughput(bench: BenchServer, sink: FlakyEndpoint, messages: number): Promise<OrderingRow[]> {
  const rows: OrderingRow[] = [];
  for (const system of SYSTEMS) rows.push(await deliverAll(bench, sink, system, messages));
  return rows;
}

async function deliverAll(bench: BenchServer, sink: FlakyEndpoint, system: OrderingSystem, n: number): Promise<OrderingRow> {
  const run = randomUUID().slice(0, 6);
  const taskQueue = `ordering-${run}`;
  const keys = system === 'ordered, 1 key' ? 1 : system === 'ordered, 100 keys' ? 100 : 0;
  const inputs: DeliveryInput[] = Array.from({ length: n }, (_, i) => ({
    kind: 'event',
    tenant: 'bench',
    device: `d-${run}`,
    messageId: `m-${i}`,
    payload: { i },
    target: `${sink.url}/ordering`,
    ...(keys > 0 && { orderingKey: `k-${run}-${i % keys}` }),
  }));
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  const before = await worker.stats();
  const serverBefore = bench.serverCpuMs();
  const redeliver = new Redeliver(bench.client, { taskQueue });
  const started = Date.now();
  // a pool takes the inputs in order: each key's places are taken in submit order
  const ids = await pool(inputs, 64, async (input) => (await redeliver.submit(input)).deliveryId);
  const query = `TaskQueue = '${taskQueue}' AND WorkflowType = 'deliveryWorkflow' AND ExecutionStatus = 'Completed'`;
  const finished = await waitForCount(bench.client, query, n, 60 * 60_000);
  const serverCpuMs = bench.serverCpuMs() - serverBefore;
  const after = await worker.stats();
  await worker.stop();
  const seconds = (finished - started) / 1000;
  const sequencers = [...new Set(inputs.map((i) => i.orderingKey).filter((k) => k !== undefined))];
  const row: OrderingRow = {
    system,
    messages: n,
    seconds: round(seconds, 2),
    perSecond: round(n / seconds, 1),
    workerCpuMsPerMessage: round((after.cpuMs - before.cpuMs) / n, 2),
    serverCpuMsPerMessage: round(serverCpuMs / n, 2),
    workerPeakRssMb: mb(after.peakRss),
    deliveryEventsPerMessage: await meanEvents(bench.client, ids),
    sequencerEventsPerMessage: sequencers.length
      ? round(
          (await eventsOfRuns(
            bench.client,
            sequencers.map((k) => orderingWorkflowId('bench', k)),
          )) / n,
          1,
        )
      : 0,
  };
  console.log(`  ${system}: ${row.perSecond}/s, ${row.deliveryEventsPerMessage} + ${row.sequencerEventsPerMessage} events per message`);
  return row;
}

/** Events of one delivery, the mean over a sample spread across the run. */
async function meanEvents(client: Client, workflowIds: string[]): Promise<number> {
  const step = Math.max(1, Math.floor(workflowIds.length / SAMPLED_HISTORIES));
  const sample = workflowIds.filter((_, i) => i % step === 0).slice(0, SAMPLED_HISTORIES);
  let events = 0;
  for (const id of sample) events += (await client.workflow.getHandle(id).fetchHistory()).events?.length ?? 0;
  return round(events / sample.length, 1);
}

/** Events of every run of these workflows (a sequencer continues as new): what its key cost in all. */
async function eventsOfRuns(client: Client, workflowIds: string[]): Promise<number> {
  let events = 0;
  for (const id of workflowIds) {
    for await (const run of client.workflow.list({ query: `WorkflowId = '${id}'` })) {
      events += (await client.workflow.getHandle(id, run.runId).fetchHistory()).events?.length ?? 0;
    }
  }
  return events;
}
