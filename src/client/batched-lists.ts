import type { ActivityClient, ActivityExecutionInfo, WorkflowClient, WorkflowExecutionInfo } from '@temporalio/client';
import { completedBatchesQuery } from '../batching/message-index';
import type { DeliveryFilter } from '../delivery/filter';
import { idParts } from '../delivery/ids';
import type { DeliveryStateName } from '../delivery/types';
import { isEncryptedValue } from '../encryption/codec';
import { batchInputFacts } from './batched';
import { activityClientOf, closedFirstAttemptsQuery, findFirstAttempt } from './first-attempts';
import { runsStandaloneActivities } from '../starter/first-attempt';
import { heldReader, type FoundHeld } from './holds';
import type { DeliverySummary } from './lists';
import { ConfigError } from '../config/errors';
import { batchNamed, type BatchResult, type BatchWorkflow, type MessageResult } from '../contract';

/*
 * The messages of batches that have no delivery of their own (delivered at once, or waiting in or delivered from
 * an outage hold) as lines of a listing (docs/batches.md, "Finding a message by its id"), merged with the
 * deliveries' own lines newest first. A message of a batch is placed by when its batch made its first attempt.
 */

/** A line of a listing and where it is placed: a delivery's by its close time (+∞ while running), a batch's message by its row's time. */
interface Placed {
  at: number;
  summary: DeliverySummary;
}

/** The states a batch's message can be in without a delivery of its own; a single submit's, cancelled too (before its attempt was done). */
const BATCHED_STATES: readonly DeliveryStateName[] = ['delivered', 'waiting'];
const FIRST_ATTEMPT_STATES: readonly DeliveryStateName[] = [...BATCHED_STATES, 'cancelled'];

/**
 * The lines of the deliveries (visibility's order: running first, then by close time), of the batched messages and of
 * single submits' first attempts without a delivery of their own, merged newest first.
 */
export async function* mergedListing(
  client: WorkflowClient,
  taskQueue: string,
  filter: DeliveryFilter,
  deliveries: AsyncIterable<DeliverySummary>,
  activities?: ActivityClient | null,
): AsyncIterable<DeliverySummary> {
  // first attempts are looked for where the namespace runs standalone activities
  const firsts = activities !== undefined ? activities : (await runsStandaloneActivities(client)) ? activityClientOf(client) : null;
  for await (const line of mergedPlaced(client, taskQueue, filter, deliveries, firsts)) yield line.summary;
}

/** The merged lines with the time each is placed by. */
async function* mergedPlaced(
  client: WorkflowClient,
  taskQueue: string,
  filter: DeliveryFilter,
  deliveries: AsyncIterable<DeliverySummary>,
  activities: ActivityClient | null,
): AsyncGenerator<Placed> {
  const sources = [placed(deliveries), batchedLines(client, taskQueue, filter), firstAttemptLines(client, activities, taskQueue, filter)];
  try {
    const heads = await Promise.all(sources.map((s) => s.next()));
    for (;;) {
      // the newest head; on a tie, the earlier source (the deliveries' own first)
      let pick = -1;
      heads.forEach((head, i) => {
        if (!head.done && (pick < 0 || head.value.at > (heads[pick]!.value as Placed).at)) pick = i;
      });
      if (pick < 0) return;
      yield heads[pick]!.value as Placed;
      heads[pick] = await sources[pick]!.next();
    }
  } finally {
    // a caller that stopped early (it has enough lines): the listings behind it stop too
    await Promise.all(sources.map((s) => s.return(undefined)));
  }
}

async function* placed(deliveries: AsyncIterable<DeliverySummary>): AsyncGenerator<Placed> {
  for await (const summary of deliveries) yield { at: summary.closedAt ? Date.parse(summary.closedAt) : Infinity, summary };
}

/** The batched messages matching a filter, newest first. */
function batchedLines(client: WorkflowClient, taskQueue: string, filter: DeliveryFilter): AsyncGenerator<Placed> {
  const batches = wantsBatched(filter, BATCHED_STATES) ? client.list({ query: completedBatchesQuery(taskQueue, filter) }) : null;
  return linesOf(
    client,
    filter,
    batches,
    (batch) => batch.closeTime,
    (batch) => batchRows(client, batch, filter),
  );
}

/** Single submits' first attempts (standalone activities) without a delivery of their own matching a filter, newest first. */
function firstAttemptLines(client: WorkflowClient, activities: ActivityClient | null, taskQueue: string, filter: DeliveryFilter) {
  const closed =
    activities && wantsBatched(filter, FIRST_ATTEMPT_STATES) ? activities.list(closedFirstAttemptsQuery(taskQueue, filter)) : null;
  return linesOf(
    client,
    filter,
    closed,
    (first) => first.closeTime,
    (first) => firstAttemptRows(activities!, first, filter),
  );
}

/**
 * The lines of closed executions' rows (a batch's messages, a first attempt's message) listed newest closed first.
 * Each row's time is within its execution's life, so a row is placed once no execution still to read closed after it.
 */
async function* linesOf<T>(
  client: WorkflowClient,
  filter: DeliveryFilter,
  listing: AsyncIterable<T> | null,
  closeTime: (execution: T) => Date | undefined,
  rowsOf: (execution: T) => Promise<Placed[]>,
): AsyncGenerator<Placed> {
  if (!listing) return;
  const held = heldReader(client);
  const executions = listing[Symbol.asyncIterator]();
  let next = await executions.next();
  let rows: Placed[] = [];
  try {
    for (;;) {
      while (!next.done && (rows.length === 0 || (closeTime(next.value)?.getTime() ?? Infinity) >= rows[0]!.at)) {
        rows = [...rows, ...(await rowsOf(next.value))].sort((x, y) => y.at - x.at);
        next = await executions.next();
      }
      const row = rows.shift();
      if (!row) return;
      if (filter.since && row.at < filter.since.getTime()) return;
      const line = row.summary.hold ? await heldLine(held, row.summary) : row.summary;
      if (line && matchesState(filter, line.state) && matchesClass(filter, line)) yield { at: row.at, summary: line };
    }
  } finally {
    await executions.return?.(undefined);
  }
}

const statesOf = (filter: DeliveryFilter): DeliveryStateName[] => [filter.state ?? []].flat();

/** Whether any message without a delivery of its own can match: the states it can be in, and no error class but a waiting message's. */
function wantsBatched(filter: DeliveryFilter, possible: readonly DeliveryStateName[]): boolean {
  const states = statesOf(filter);
  if (states.length > 0 && !states.some((s) => possible.includes(s))) return false;
  return !filter.errorClass || states.length === 0 || states.includes('waiting');
}

const matchesState = (filter: DeliveryFilter, state: string) =>
  statesOf(filter).length === 0 || statesOf(filter).includes(state as DeliveryStateName);
const matchesClass = (filter: DeliveryFilter, line: DeliverySummary) => !filter.errorClass || line.lastErrorClass === filter.errorClass;

/** The rows of one completed batch that have no delivery of their own and match the filter's message fields, as lines. */
async function batchRows(client: WorkflowClient, batch: WorkflowExecutionInfo, filter: DeliveryFilter): Promise<Placed[]> {
  const result: BatchResult | unknown = await client.getHandle<BatchWorkflow>(batch.workflowId).result();
  // a process without the keys cannot read an encrypted batch's rows
  if (isEncryptedValue(result)) return [];
  const rows = (result as BatchResult).results.filter((r) => r.disposition === 'delivered' || r.disposition === 'held');
  const facts = rows.some((r) => !r.kind) ? await batchInputFacts(client, batch) : new Map<string, Facts>();
  const lines: Placed[] = [];
  for (const row of rows) {
    const at = Date.parse(row.at);
    const fact = row.kind ? row : facts.get(row.deliveryId);
    const { tenant, device } = idParts(row.deliveryId);
    if (filter.until && at > filter.until.getTime()) continue;
    if (filter.device && device !== filter.device) continue;
    if (filter.kind && fact?.kind !== filter.kind) continue;
    if (filter.endpoint && fact?.endpoint !== filter.endpoint) continue;
    lines.push({ at, summary: rowLine(row, fact, { tenant, device, batch: batchNamed(batch.workflowId) }) });
  }
  return lines;
}

/** A closed first attempt's message as a line: delivered at once, held, or cancelled; none once handed over (its delivery is listed). */
async function firstAttemptRows(activities: ActivityClient, first: ActivityExecutionInfo, filter: DeliveryFilter): Promise<Placed[]> {
  // a process without the keys cannot read an encrypted first attempt's row, as it cannot a batch's
  const found = await findFirstAttempt(activities, first.activityId).catch((err: unknown) => {
    if (err instanceof ConfigError) return null;
    throw err;
  });
  const closedAt = first.closeTime?.getTime() ?? Date.now();
  if (!found || (!found.row && !found.cancelled)) return [];
  if (found.row && found.row.disposition !== 'delivered' && found.row.disposition !== 'held') return [];
  const at = found.row ? Date.parse(found.row.at) : closedAt;
  if (filter.until && at > filter.until.getTime()) return [];
  const { tenant, device } = idParts(first.activityId);
  if (found.row) return [{ at, summary: rowLine(found.row, found.facts, { tenant, device }) }];
  // cancelled before its attempt was done
  const iso = new Date(at).toISOString();
  const { kind, endpoint } = found.facts;
  const summary = { deliveryId: first.activityId, runId: '', state: 'cancelled', kind, tenant, device, endpoint, attempts: 0 } as const;
  return [{ at, summary: { ...summary, lastErrorClass: undefined, startedAt: first.scheduleTime?.toISOString() ?? iso, closedAt: iso } }];
}

type Facts = Pick<MessageResult, 'kind' | 'qos' | 'endpoint'>;

function rowLine(
  row: MessageResult,
  facts: Facts | undefined,
  where: { tenant: string | undefined; device: string | undefined; batch?: { batchId: string; workflowId: string } },
): DeliverySummary {
  return {
    deliveryId: row.deliveryId,
    runId: '',
    state: 'delivered',
    kind: facts?.kind,
    tenant: where.tenant,
    device: where.device,
    endpoint: facts?.endpoint,
    attempts: 1,
    lastErrorClass: undefined,
    startedAt: row.at,
    closedAt: row.at,
    ...(where.batch && { batch: where.batch }),
    ...(row.hold && { hold: { holdId: row.hold } }),
  };
}

/** A held message's line, as its hold tells it: waiting, or delivered from it; null once handed over (its delivery is listed). */
async function heldLine(
  held: (holdId: string, deliveryId: string) => Promise<FoundHeld | null>,
  line: DeliverySummary,
): Promise<DeliverySummary | null> {
  const found = await held(line.hold!.holdId, line.deliveryId);
  if (!found) return null;
  const { message, left } = found.view;
  if (message) return { ...line, state: 'waiting', attempts: message.attempts, lastErrorClass: message.lastError?.class, closedAt: null };
  if (left?.left !== 'delivered') return null;
  return { ...line, attempts: left.attempts, closedAt: new Date(left.at).toISOString() };
}
