import type { Client } from '@temporalio/client';
import type { Redeliver } from '../src/client/index';
import type { BatchResult } from '../src/contract/batch';
import { DEAD_LETTER_STATES } from '../src/delivery/filter';
import { pool } from './harness';

/**
 * What an outage cost redeliver in workflows, read from the dev server after the run (bench/outage.ts): the
 * batches and what became of their messages, the delivery workflows the failed messages were handed over to,
 * and the outage holds that kept them instead (docs/endpoint-health.md, "Outages"). Written so that it reads a
 * run with holds or without (a task queue with no holdWorkflow counts none), and whatever dispositions batch
 * rows carry.
 */
export interface WorkflowFigures {
  batches: number;
  /** Batches still running or failed when the figures were read (a run that timed out): their rows are not counted. */
  batchesNotCompleted: number;
  /** The batches' result rows by disposition (`delivered`, `handed-over`, `held`, `queued`). */
  dispositions: Record<string, number>;
  /** The rows not delivered by their batch, by code: their first attempt's (`http-503`), or why it was not made. */
  notDeliveredCodes: Record<string, number>;
  deliveries: Executions;
  holds: Executions & {
    /** Executions of the release activity (ActivityTaskScheduled `releaseHeld`): its rounds. */
    releaseRounds: number;
    /** `released` signals: the release activity's reports. */
    releasedSignals: number;
    /** Accepted `hold` updates: the batches' hand-ins (several batches of a worker go in one while another is in flight). */
    handIns: number;
    /** Σ over the holds of (messages held there × its release rounds): what events per held message per round divide by. */
    heldTimesRounds: number;
  };
}

interface Executions {
  /** Executions (runs: a workflow continued as new counts once a run), and those started while the endpoint was down. */
  runs: number;
  startedWhileDown: number;
  /** History events of every run together. */
  historyEvents: number;
}

const HOLD_RELEASE_ACTIVITY = 'releaseHeld';
const HOLD_RELEASED_SIGNAL = 'released';
const HOLD_UPDATE = 'hold';

export async function workflowFigures(client: Client, taskQueue: string, down: { from: number; until: number }): Promise<WorkflowFigures> {
  const [{ heldByHold, ...batches }, deliveries, { roundsByHold, ...holds }] = await Promise.all([
    batchDispositions(client, taskQueue),
    executions(client, `WorkflowType = 'deliveryWorkflow' AND TaskQueue = '${taskQueue}'`, down),
    holdFigures(client, taskQueue, down),
  ]);
  // each hold has rounds of its own: a message held in one is not sent in another's rounds
  const heldTimesRounds = Object.entries(heldByHold).reduce((sum, [hold, held]) => sum + held * (roundsByHold[hold] ?? 0), 0);
  return { ...batches, deliveries: deliveries.figures, holds: { ...holds, heldTimesRounds } };
}

/** Every batch's result (each a few hundred rows at most), its rows counted by disposition. */
async function batchDispositions(
  client: Client,
  taskQueue: string,
): Promise<
  Pick<WorkflowFigures, 'batches' | 'batchesNotCompleted' | 'dispositions' | 'notDeliveredCodes'> & { heldByHold: Record<string, number> }
> {
  const ids: string[] = [];
  let batches = 0;
  for await (const info of client.workflow.list({ query: `WorkflowType = 'batchWorkflow' AND TaskQueue = '${taskQueue}'` })) {
    batches++;
    // a running batch's result would be waited for
    if (info.status.name === 'COMPLETED') ids.push(info.workflowId);
  }
  const dispositions: Record<string, number> = {};
  const notDeliveredCodes: Record<string, number> = {};
  const heldByHold: Record<string, number> = {};
  const add = (counts: Record<string, number>, key: string) => (counts[key] = (counts[key] ?? 0) + 1);
  await pool(ids, 16, async (id) => {
    const result = (await client.workflow.getHandle(id).result()) as BatchResult;
    for (const row of result.results) {
      add(dispositions, row.disposition);
      if (row.disposition !== 'delivered') add(notDeliveredCodes, row.code);
      if (row.disposition === 'held' && row.hold) add(heldByHold, row.hold);
    }
  });
  return { batches, batchesNotCompleted: batches - ids.length, dispositions, notDeliveredCodes, heldByHold };
}

/** Runs matching a query, from visibility; a running one's history length from its description (visibility's may lag). */
async function executions(
  client: Client,
  query: string,
  down: { from: number; until: number },
): Promise<{ figures: Executions; ids: RunId[] }> {
  const figures: Executions = { runs: 0, startedWhileDown: 0, historyEvents: 0 };
  const ids: RunId[] = [];
  const running: RunId[] = [];
  for await (const info of client.workflow.list({ query })) {
    figures.runs++;
    const started = info.startTime.getTime();
    if (started >= down.from && started < down.until) figures.startedWhileDown++;
    const run = { workflowId: info.workflowId, runId: info.runId };
    ids.push(run);
    if (info.status.name === 'RUNNING') running.push(run);
    else figures.historyEvents += info.historyLength;
  }
  await pool(running, 16, async ({ workflowId, runId }) => {
    figures.historyEvents += (await client.workflow.getHandle(workflowId, runId).describe()).historyLength;
  });
  return { figures, ids };
}

type RunId = { workflowId: string; runId: string };

/** The holds' runs, and in their histories the release activity's rounds and reports (a few runs: one per generation and continue-as-new). */
async function holdFigures(
  client: Client,
  taskQueue: string,
  down: { from: number; until: number },
): Promise<Omit<WorkflowFigures['holds'], 'heldTimesRounds'> & { roundsByHold: Record<string, number> }> {
  const { figures, ids } = await executions(client, `WorkflowType = 'holdWorkflow' AND TaskQueue = '${taskQueue}'`, down);
  let releaseRounds = 0;
  let releasedSignals = 0;
  let handIns = 0;
  // by workflow id: a hold continued as new is one hold
  const roundsByHold: Record<string, number> = {};
  await pool(ids, 4, async ({ workflowId, runId }) => {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    for (const event of history.events ?? []) {
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === HOLD_RELEASE_ACTIVITY) {
        releaseRounds++;
        roundsByHold[workflowId] = (roundsByHold[workflowId] ?? 0) + 1;
      }
      if (event.workflowExecutionSignaledEventAttributes?.signalName === HOLD_RELEASED_SIGNAL) releasedSignals++;
      if (event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === HOLD_UPDATE) handIns++;
    }
  });
  return { ...figures, releaseRounds, releasedSignals, handIns, roundsByHold };
}

/** Dead letters by state, from the client's listing (newest first: each delivery's latest run counts). */
export async function deadLettersByState(redeliver: Redeliver): Promise<Record<string, number>> {
  const latest = new Map<string, string>();
  for await (const letter of redeliver.deadLetters()) if (!latest.has(letter.deliveryId)) latest.set(letter.deliveryId, letter.state);
  const byState: Record<string, number> = Object.fromEntries(DEAD_LETTER_STATES.map((s) => [s, 0]));
  for (const state of latest.values()) byState[state] = (byState[state] ?? 0) + 1;
  return byState;
}
