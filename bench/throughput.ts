import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { pool, round, mb, startWorkerProcess, waitForCount, type BenchServer } from './harness';

export interface ThroughputRow {
  /**
   * `redeliver`: a single submit as made by default, a delivery's workflow from the start; `redeliver-standalone`: with
   * REDELIVER_SINGLE_SUBMIT=standalone, its first attempt a standalone activity (docs/batches.md, "A single submit");
   * `baseline`: one workflow, one activity.
   */
  system: 'redeliver' | 'redeliver-standalone' | 'baseline';
  deliveries: number;
  seconds: number;
  perSecond: number;
  workerCpuMsPerDelivery: number;
  workerPeakRssMb: number;
  /** The dev server's CPU time per delivery while the system ran (its visibility counts every 200 ms included). */
  serverCpuMsPerDelivery: number;
  /** History events of one delivery (the mean of a sample of them), and its workflow tasks. */
  historyEventsPerDelivery: number;
  workflowTasksPerDelivery: number;
  /** Workflows the run started, per delivery (absent from rows before the standalone first attempt). */
  workflowsPerDelivery?: number;
}

type System = ThroughputRow['system'];

/** Deliveries whose histories are read: every one takes the same path, a few show a stray retried task. */
const SAMPLED_HISTORIES = 10;

/**
 * First-attempt success to a local sink: deliveries per second from the first submit until the last
 * workflow closed, for redeliver and for the bare baseline (one workflow, one activity, the same POST);
 * and what one delivery cost: worker and server CPU, history events and workflow tasks. Each size runs
 * both systems in turn on the same server, whose database grows with every run: the order alternates
 * from one size to the next, so that neither always runs on the larger database.
 */
export async function throughput(bench: BenchServer, sink: FlakyEndpoint, sizes: number[]): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const [i, n] of sizes.entries()) {
    const systems: System[] = ['baseline', 'redeliver-standalone', 'redeliver'];
    // each size starts with the next system, so that none always runs on the largest database
    const order = systems.map((_, k) => systems[(k + i) % systems.length]!);
    for (const system of order) rows.push(await deliverAtOnce(bench, sink, system, n));
  }
  return rows;
}

/** `n` deliveries of one system, each delivered by its first attempt, on a worker process of its own. */
async function deliverAtOnce(bench: BenchServer, sink: FlakyEndpoint, system: System, n: number): Promise<ThroughputRow> {
  const taskQueue = `tp-${system}-${n}-${randomUUID().slice(0, 6)}`;
  const worker = await startWorkerProcess(system === 'baseline' ? 'baseline' : 'redeliver', bench.server.address, taskQueue);
  const before = await worker.stats();
  const serverBefore = bench.serverCpuMs();
  const started = Date.now();
  const ids = Array.from({ length: n }, (_, i) => `m${i}`);
  const redeliver = new Redeliver(bench.client, { taskQueue, singleSubmit: system === 'redeliver-standalone' ? 'standalone' : 'workflow' });
  const workflowIds = await pool(ids, 64, async (id) => {
    if (system !== 'baseline') {
      const handle = await redeliver.submit({
        kind: 'event',
        tenant: 'bench',
        device: taskQueue,
        messageId: id,
        payload: { id },
        target: `${sink.url}/tp`,
      });
      return handle.deliveryId;
    }
    const workflowId = `${taskQueue}/${id}`;
    await bench.client.workflow.start('bareDelivery', { taskQueue, workflowId, args: [`${sink.url}/tp`, JSON.stringify({ id }), id] });
    return workflowId;
  });
  const completed = `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Completed'`;
  // a standalone first attempt delivered at once is a completed activity, no workflow
  const finished =
    system === 'redeliver-standalone'
      ? await waitForCount(bench.client, completed, n, 30 * 60_000, (query) => bench.client.activity.count(query))
      : await waitForCount(bench.client, completed, n, 30 * 60_000);
  const serverCpuMs = bench.serverCpuMs() - serverBefore;
  const after = await worker.stats();
  await worker.stop();
  const seconds = (finished - started) / 1000;
  // the messages' own workflows (the endpoint's workflow, which every worker reports to, is not one)
  const workflows = (
    await bench.client.workflow.count(`TaskQueue = '${taskQueue}' AND WorkflowType IN ('deliveryWorkflow', 'bareDelivery')`)
  ).count;
  const costs =
    workflows === 0 ? { historyEventsPerDelivery: 0, workflowTasksPerDelivery: 0 } : await historyCosts(bench.client, workflowIds);
  console.log(
    `  throughput ${system} ${n}: ${round(n / seconds, 1)}/s, ${costs.historyEventsPerDelivery} events, ${costs.workflowTasksPerDelivery} workflow tasks`,
  );
  return {
    system,
    deliveries: n,
    seconds: round(seconds, 2),
    perSecond: round(n / seconds, 1),
    workerCpuMsPerDelivery: round((after.cpuMs - before.cpuMs) / n, 2),
    workerPeakRssMb: mb(after.peakRss),
    serverCpuMsPerDelivery: round(serverCpuMs / n, 2),
    ...costs,
    workflowsPerDelivery: round(workflows / n, 2),
  };
}

/** History events and workflow tasks (each a poll and a completion) per delivery, over a sample spread across the run. */
async function historyCosts(client: Client, workflowIds: string[]) {
  const step = Math.max(1, Math.floor(workflowIds.length / SAMPLED_HISTORIES));
  const sample = workflowIds.filter((_, i) => i % step === 0).slice(0, SAMPLED_HISTORIES);
  let events = 0;
  let workflowTasks = 0;
  for (const id of sample) {
    const history = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    events += history.length;
    workflowTasks += history.filter((e) => e.workflowTaskStartedEventAttributes).length;
  }
  return { historyEventsPerDelivery: round(events / sample.length, 1), workflowTasksPerDelivery: round(workflowTasks / sample.length, 1) };
}
