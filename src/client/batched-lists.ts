import type { WorkflowClient, WorkflowExecutionInfo } from '@temporalio/client';
import { completedBatchesQuery } from '../batching/message-index';
import type { DeliveryFilter } from '../delivery/filter';
import { idParts } from '../delivery/ids';
import type { DeliveryStateName } from '../delivery/types';
import { isEncryptedValue } from '../encryption/codec';
import { batchInputFacts } from './batched';
import { heldReader, type FoundHeld } from './holds';
import type { DeliverySummary } from './lists';
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

/** The states a batch's message can be in without a delivery of its own. */
const BATCHED_STATES: readonly DeliveryStateName[] = ['delivered', 'waiting'];

/** The lines of the deliveries (visibility's order: running first, then by close time) and of the batched messages, merged. */
export async function* mergedListing(
  client: WorkflowClient,
  taskQueue: string,
  filter: DeliveryFilter,
  deliveries: AsyncIterable<DeliverySummary>,
): AsyncIterable<DeliverySummary> {
  const own = placed(deliveries);
  const batched = batchedLines(client, taskQueue, filter);
  try {
    let [a, b] = await Promise.all([own.next(), batched.next()]);
    while (!a.done || !b.done) {
      if (b.done || (!a.done && a.value.at >= b.value.at)) {
        yield a.value!.summary;
        a = await own.next();
      } else {
        yield b.value.summary;
        b = await batched.next();
      }
    }
  } finally {
    // a caller that stopped early (it has enough lines): the listings behind it stop too
    await Promise.all([own.return(undefined), batched.return(undefined)]);
  }
}

async function* placed(deliveries: AsyncIterable<DeliverySummary>): AsyncGenerator<Placed> {
  for await (const summary of deliveries) yield { at: summary.closedAt ? Date.parse(summary.closedAt) : Infinity, summary };
}

/**
 * The batched messages matching a filter, newest first. Each row's time is within its batch's life, so a row is
 * placed once no batch still to read closed after it (batches list by close time, newest first).
 */
async function* batchedLines(client: WorkflowClient, taskQueue: string, filter: DeliveryFilter): AsyncGenerator<Placed> {
  if (!wantsBatched(filter)) return;
  const held = heldReader(client);
  const batches = client.list({ query: completedBatchesQuery(taskQueue, filter) })[Symbol.asyncIterator]();
  let next = await batches.next();
  let rows: Placed[] = [];
  for (;;) {
    while (!next.done && (rows.length === 0 || (next.value.closeTime?.getTime() ?? Infinity) >= rows[0]!.at)) {
      rows = [...rows, ...(await batchRows(client, next.value, filter))].sort((x, y) => y.at - x.at);
      next = await batches.next();
    }
    const row = rows.shift();
    if (!row) return;
    if (filter.since && row.at < filter.since.getTime()) return;
    const line = row.summary.hold ? await heldLine(held, row.summary) : row.summary;
    if (line && matchesState(filter, line.state) && matchesClass(filter, line)) yield { at: row.at, summary: line };
  }
}

const statesOf = (filter: DeliveryFilter): DeliveryStateName[] => [filter.state ?? []].flat();

/** Whether any batched message can match: its states, and no error class but a waiting message's. */
function wantsBatched(filter: DeliveryFilter): boolean {
  const states = statesOf(filter);
  if (states.length > 0 && !states.some((s) => BATCHED_STATES.includes(s))) return false;
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
    lines.push({ at, summary: rowLine(row, fact, { tenant, device, batch }) });
  }
  return lines;
}

type Facts = Pick<MessageResult, 'kind' | 'qos' | 'endpoint'>;

function rowLine(
  row: MessageResult,
  facts: Facts | undefined,
  where: { tenant: string | undefined; device: string | undefined; batch: WorkflowExecutionInfo },
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
    batch: batchNamed(where.batch.workflowId),
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
