import { readFileSync } from 'node:fs';
import { checkBatchId, MAX_BATCH_MESSAGES, planSubmission, type BatchOptions, type PlannedBatch } from '../batching/batches';
import type { Redeliver } from '../client/index';
import type { DeliveryInput, Outcome } from '../delivery/types';
import { InvalidInputError, type Problem } from '../errors';
import { validateDeliveries } from '../validation/delivery';
import { secretTenantsFromEnvironment } from '../transports/secret-tenants';
import { connect, type ConnectionFlags } from './connection';
import { EXIT, emit } from './output';
import { wholeNumber } from './number-flags';
import { progressBar } from './progress';

/** The flags of `submit` that shape a bulk submit. */
export interface FileFlags extends ConnectionFlags {
  file?: string;
  /** false with --no-batch */
  batch: boolean;
  batchId?: string;
  batchSize?: string;
  wait?: boolean;
  json?: boolean;
}

/** One message's end, as the summary counts it. */
interface Ended {
  deliveryId: string;
  outcome: Outcome;
  attempts: number;
}

/** What a bulk submit started: batches (none with --no-batch), and the workflows among them that are new. */
interface Submitted {
  messages: number;
  batchWorkflowIds: string[];
  /** New batches; with --no-batch, new deliveries. The rest existed: a resubmitted file sends nothing again. */
  created: number;
  deliveryIds: string[];
  outcomes(): Promise<Ended[]>;
}

const OUTCOMES: readonly Outcome[] = ['delivered', 'rejected', 'dropped', 'exhausted', 'expired', 'cancelled'];
/** Messages not delivered that the human output names one by one; JSON names them all. */
const LISTED = 20;

/** Flags that only a bulk submit takes: refused on a single submit. */
export function refuseBatchFlags(flags: FileFlags): void {
  refuse(batchFlagsGiven(flags), 'is for a bulk submit (--file)');
}

function batchFlagsGiven(flags: FileFlags): string[] {
  const values = { '--batch-id': flags.batchId, '--batch-size': flags.batchSize, '--no-batch': flags.batch ? undefined : '' };
  return Object.entries(values)
    .filter(([, value]) => value !== undefined)
    .map(([name]) => name);
}

function refuse(flags: string[], message: string): void {
  const problems = flags.map((field) => ({ field, message }));
  if (problems.length) throw new InvalidInputError(problems, 'flags');
}

/**
 * `submit --file`: every message validated before connecting (exit 2 naming the field, nothing started), then
 * batches (one Temporal start per batch; Redeliver.submitBatch), or one workflow per message with --no-batch.
 * With --wait, every message's outcome: exit 1 if any was not delivered, as a single submit's --wait.
 */
export async function submitFile(flags: FileFlags): Promise<void> {
  const inputs = parseDeliveries(flags.file === '-' ? readFileSync(0, 'utf8') : readFileSync(flags.file!, 'utf8'));
  const options = batchOptions(flags);
  // bad input starts nothing and draws no bar; in batches, a message id given twice for different messages too
  const validate = { secretTenants: secretTenantsFromEnvironment() };
  const planned = options ? planSubmission(inputs, options, validate) : (validateDeliveries(inputs, validate), undefined);
  const redeliver = await connect(flags);
  try {
    const started = Date.now();
    const submitted = planned ? await inBatches(redeliver, planned) : await oneByOne(redeliver, inputs);
    const ended = flags.wait ? await submitted.outcomes() : undefined;
    report(!!flags.json, submitted, ended, Date.now() - started);
    if (ended?.some((e) => e.outcome !== 'delivered')) process.exitCode = EXIT.notDelivered;
  } finally {
    await redeliver.close();
  }
}

/** The batch flags, checked; undefined with --no-batch. */
function batchOptions(flags: FileFlags): BatchOptions | undefined {
  if (!flags.batch) {
    refuse(
      batchFlagsGiven(flags).filter((f) => f !== '--no-batch'),
      'is for batches, not --no-batch',
    );
    return undefined;
  }
  const problems: Problem[] = [];
  const maxMessages =
    flags.batchSize === undefined ? undefined : wholeNumber(problems, '--batch-size', flags.batchSize, 1, MAX_BATCH_MESSAGES);
  try {
    checkBatchId(flags.batchId);
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    problems.push(...err.problems.map((p) => ({ ...p, field: '--batch-id' })));
  }
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  return { ...(flags.batchId !== undefined && { batchId: flags.batchId }), ...(maxMessages !== undefined && { maxMessages }) };
}

async function inBatches(redeliver: Redeliver, planned: PlannedBatch[]): Promise<Submitted> {
  const submission = await redeliver.startBatches(planned);
  return {
    messages: submission.messages,
    batchWorkflowIds: submission.batches.map((b) => b.workflowId),
    created: submission.batches.filter((b) => b.created).length,
    deliveryIds: submission.deliveryIds,
    outcomes: () => submission.outcomes(),
  };
}

async function oneByOne(redeliver: Redeliver, inputs: DeliveryInput[]): Promise<Submitted> {
  let bar: ReturnType<typeof progressBar> | undefined;
  const handles = await redeliver.submitMany(inputs, (done) => (bar ??= progressBar('submit', inputs.length)).update(done));
  bar?.stop();
  return {
    messages: handles.length,
    batchWorkflowIds: [],
    created: handles.filter((h) => h.created).length,
    deliveryIds: handles.map((h) => h.deliveryId),
    outcomes: async () => {
      const ended: Ended[] = [];
      // a few dozen long polls at a time: the results come as the deliveries end, in any order
      for (let i = 0; i < handles.length; i += 32) ended.push(...(await Promise.all(handles.slice(i, i + 32).map((h) => h.result()))));
      return ended;
    },
  };
}

function report(json: boolean, submitted: Submitted, ended: Ended[] | undefined, elapsedMs: number): void {
  const outcomes = ended && Object.fromEntries(OUTCOMES.map((o) => [o, ended.filter((e) => e.outcome === o).length]));
  const notDelivered = (ended ?? [])
    .filter((e) => e.outcome !== 'delivered')
    .map(({ deliveryId, outcome, attempts }) => ({ deliveryId, outcome, attempts }));
  const { messages, batchWorkflowIds, created, deliveryIds } = submitted;
  const value = {
    messages,
    batches: batchWorkflowIds.length,
    created,
    ...(outcomes && { outcomes, notDelivered }),
    elapsedMs,
    batchWorkflowIds,
    deliveryIds,
  };
  emit(json, value, () => [...submittedLines(submitted), ...(outcomes ? outcomeLines(outcomes, notDelivered, elapsedMs) : [])]);
}

function submittedLines({ messages, batchWorkflowIds, created }: Submitted): string[] {
  if (!messages) return ['the file holds no deliveries: nothing submitted'];
  if (!batchWorkflowIds.length)
    return [`submitted ${created} deliveries${messages > created ? `, ${messages - created} existed already` : ''}`];
  const existed = batchWorkflowIds.length - created;
  const batches = `${batchWorkflowIds.length} batch${batchWorkflowIds.length === 1 ? '' : 'es'}`;
  return [
    `submitted ${messages} messages in ${batches}: ${created} new${existed ? `, ${existed} submitted before (nothing of theirs is sent again)` : ''}`,
    ...batchWorkflowIds.map((id) => `  ${id}`),
  ];
}

function outcomeLines(outcomes: Record<string, number>, notDelivered: Ended[], elapsedMs: number): string[] {
  const counts = Object.entries(outcomes).filter(([, n]) => n > 0);
  return [
    `outcomes after ${(elapsedMs / 1000).toFixed(1)} s: ${counts.map(([o, n]) => `${n} ${o}`).join(', ') || 'none'}`,
    ...notDelivered.slice(0, LISTED).map((e) => `  ${e.outcome.padEnd(9)} ${String(e.attempts).padStart(2)} attempt(s)  ${e.deliveryId}`),
    ...(notDelivered.length > LISTED ? [`  … and ${notDelivered.length - LISTED} more (--json lists them all)`] : []),
  ];
}

/** A JSON array, or one JSON object per line (NDJSON); a line that does not parse is named. */
export function parseDeliveries(text: string): DeliveryInput[] {
  if (text.trimStart().startsWith('[')) {
    try {
      return JSON.parse(text) as DeliveryInput[];
    } catch (err) {
      throw new InvalidInputError([{ field: '--file', message: `is not valid JSON: ${(err as Error).message}` }], 'flags');
    }
  }
  const problems: { field: string; message: string }[] = [];
  const inputs: DeliveryInput[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      inputs.push(JSON.parse(line) as DeliveryInput);
    } catch (err) {
      problems.push({ field: `--file line ${i + 1}`, message: `is not valid JSON: ${(err as Error).message}` });
    }
  });
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  return inputs;
}
