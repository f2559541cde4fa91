import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import type { DeliveryInput, DeliveryResult, MessageKind } from '../src/delivery/types';
import type { Priority } from '../src/endpoints/priority';
import { quantile, round, startWorkerProcess, type BenchServer } from './harness';

export interface DeadlineSizes {
  /** The endpoint's limit, attempts a second. */
  rate: number;
  telemetry: number;
  events: number;
  commands: number;
  /** Each command response's deadline, from its submit. */
  deadlineMs: number;
}

export interface DeadlineRow {
  priority: Priority;
  rate: number;
  telemetry: number;
  events: number;
  commands: number;
  deadlineSeconds: number;
  /** Command responses that reached the endpoint before their deadline, as a share of all (0–1). */
  commandsMetDeadline: number;
  commandsExpired: number;
  /** From a command response's submit to its arrival at the endpoint: median and worst of those that arrived. */
  commandP50Seconds: number | null;
  commandMaxSeconds: number | null;
  telemetryDelivered: number;
  eventsDelivered: number;
  /** From the first submit until every delivery had ended. */
  secondsToDrain: number;
}

const PRIORITIES: Priority[] = ['deadline-first', 'fifo'];
const KINDS: MessageKind[] = ['telemetry', 'event', 'command-response'];

/**
 * A mixed storm to one endpoint limited in rate: telemetry QoS 1, then events, then command responses with a
 * deadline, each kind submitted once the one before is (64 submits in flight), with and without deadline-first,
 * each on a fresh worker process and task queue (so the endpoint's settings are its own).
 */
export async function deadlineStorm(bench: BenchServer, sink: FlakyEndpoint, sizes: DeadlineSizes): Promise<DeadlineRow[]> {
  const rows: DeadlineRow[] = [];
  for (const priority of PRIORITIES) rows.push(await runStorm(bench, sink, sizes, priority));
  return rows;
}

async function runStorm(bench: BenchServer, sink: FlakyEndpoint, sizes: DeadlineSizes, priority: Priority): Promise<DeadlineRow> {
  const run = randomUUID().slice(0, 6);
  const taskQueue = `deadline-${run}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  const redeliver = new Redeliver(bench.client, { taskQueue });
  await redeliver.endpoint(sink.url).set({ rate: sizes.rate, priority });
  const counts: Record<MessageKind, number> = { telemetry: sizes.telemetry, event: sizes.events, 'command-response': sizes.commands };
  const submitted = new Map<string, { at: number; deadline: number }>();
  const started = Date.now();
  const ending: Promise<DeliveryResult[]>[] = [];
  for (const kind of KINDS) {
    const inputs = Array.from({ length: counts[kind] }, (_, i) =>
      stormInput(kind, `${run}-${kind}-${i}`, `${sink.url}/deadline`, sizes.deadlineMs),
    );
    for (const input of inputs)
      if (input.command) submitted.set(input.messageId!, { at: Date.now(), deadline: Number(input.command.deadline) });
    const handles = await redeliver.submitMany(inputs, undefined, 64);
    ending.push(Promise.all(handles.map((h) => h.result())));
  }
  const [telemetry, events, commands] = await Promise.all(ending);
  const secondsToDrain = (Date.now() - started) / 1000;
  await worker.stop();
  const arrived = sink.received.filter((r) => r.messageId !== undefined && submitted.has(r.messageId));
  const waits = arrived.map((r) => (r.at - submitted.get(r.messageId!)!.at) / 1000).sort((a, b) => a - b);
  const met = arrived.filter((r) => r.at < submitted.get(r.messageId!)!.deadline).length;
  const row: DeadlineRow = {
    priority,
    rate: sizes.rate,
    telemetry: sizes.telemetry,
    events: sizes.events,
    commands: sizes.commands,
    deadlineSeconds: sizes.deadlineMs / 1000,
    commandsMetDeadline: round(met / sizes.commands, 3),
    commandsExpired: commands!.filter((r) => r.outcome === 'expired').length,
    commandP50Seconds: waits.length ? round(quantile(waits, 0.5), 2) : null,
    commandMaxSeconds: waits.length ? round(waits.at(-1)!, 2) : null,
    telemetryDelivered: telemetry!.filter((r) => r.outcome === 'delivered').length,
    eventsDelivered: events!.filter((r) => r.outcome === 'delivered').length,
    secondsToDrain: round(secondsToDrain, 1),
  };
  console.log(`  ${priority}: ${met}/${sizes.commands} command responses before their deadline, drained in ${row.secondsToDrain} s`);
  return row;
}

/** One message of the storm; a command response's deadline runs from now. */
function stormInput(kind: MessageKind, messageId: string, target: string, deadlineMs: number): DeliveryInput {
  const common = { kind, tenant: 'bench', device: 'storm', messageId, target, payload: { messageId } };
  return kind === 'command-response' ? { ...common, command: { requestId: messageId, deadline: Date.now() + deadlineMs } } : common;
}
