import type { Redeliver } from '../client/index';
import { holdSummaryQuery, type BatchResult } from '../contract';
import type { DeliveryInput } from '../delivery/types';
import type { FlakyEndpoint, ReceivedRequest } from './flaky-endpoint';

/** The path the outage takes down, how many batches of how many messages go to it, and how long it stays down. */
const OUTAGE_PATH = '/outage';
const OUTAGE_BATCHES = 2;
const OUTAGE_BATCH_SIZE = 200;
const DOWN_FOR_MS = 5_000;
/** How long the demo waits for every message after the endpoint is back before it says how many arrived. */
const DRAIN_TIMEOUT_MS = 60_000;

function outageMessages(url: string, run: string, batch: number): DeliveryInput[] {
  return Array.from({ length: OUTAGE_BATCH_SIZE }, (_, n) => ({
    kind: 'telemetry',
    tenant: 'demo',
    device: `meter-${(n % 5) + 1}`,
    messageId: `${run}-outage-${batch}-${String(n + 1).padStart(3, '0')}`,
    target: `${url}${OUTAGE_PATH}`,
    payload: { kwh: 2000 + n },
  }));
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** One batch's result in a line: how many were delivered, held (and where), and handed over to deliveries of their own. */
function describeBatch(workflowId: string, result: BatchResult): string {
  const holds = [...new Set(result.results.flatMap((r) => (r.hold ? [r.hold] : [])))];
  const sent = result.results.filter((r) => r.code !== 'held').length;
  return (
    `  ${workflowId}: ${result.delivered} delivered, ${result.held ?? 0} held in ${holds.join(', ') || 'no hold'}, ` +
    `${result.handedOver} handed over to deliveries of their own; it sent ${sent} of ${result.messages}`
  );
}

/** The requests the endpoint saw on the outage path, between two instants (epoch ms, end excluded). */
function outageRequests(endpoint: FlakyEndpoint, from: number, to: number): ReceivedRequest[] {
  return endpoint.received.filter((r) => r.path === OUTAGE_PATH && r.at >= from && r.at < to);
}

/** Waits until the endpoint has accepted every message (or the timeout): when it accepted each (epoch ms), by message id. */
async function awaitDelivered(endpoint: FlakyEndpoint, ids: Set<string>): Promise<Map<string, number>> {
  const until = Date.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const accepted = new Map<string, number>();
    for (const r of endpoint.received) {
      if (r.path === OUTAGE_PATH && r.status < 300 && ids.has(r.messageId ?? '')) accepted.set(r.messageId!, r.at);
    }
    if (accepted.size === ids.size || Date.now() > until) return accepted;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What the batches did with the outage's messages. */
interface Submitted {
  ids: Set<string>;
  /** Delivery id by message id: the messages that failed before the endpoint looked down became deliveries of their own. */
  handedOver: Map<string, string>;
  holds: Set<string>;
  /** First attempts the batches sent (the rest were held unsent). */
  sent: number;
}

/** Submits the outage's batches one after the other, printing what each did with its messages. */
async function submitBatches(redeliver: Redeliver, url: string, run: string, say: (line: string) => void): Promise<Submitted> {
  const done: Submitted = { ids: new Set(), handedOver: new Map(), holds: new Set(), sent: 0 };
  for (let b = 1; b <= OUTAGE_BATCHES; b++) {
    const messages = outageMessages(url, run, b);
    for (const m of messages) done.ids.add(m.messageId!);
    const submission = await redeliver.submitBatch(messages, { batchId: `outage-${run}-${b}` });
    for (const batch of submission.batches) {
      const result = await batch.result();
      say(describeBatch(batch.workflowId, result));
      for (const r of result.results) {
        if (r.code !== 'held') done.sent++;
        if (r.disposition === 'handed-over') done.handedOver.set(r.messageId, r.deliveryId);
        if (r.hold) done.holds.add(r.hold);
      }
    }
  }
  if (done.handedOver.size > 0) {
    const shown = [...done.handedOver.values()].slice(0, 3).join(', ');
    say(`  on their own (they failed before the endpoint looked down): ${shown}${done.handedOver.size > 3 ? ', …' : ''}`);
  }
  return done;
}

/**
 * An endpoint going down under batches and coming back (docs/endpoint-health.md, "Outages"): the batches' messages
 * wait together in one outage hold instead of a workflow each, only probes reach the endpoint while it is down,
 * and once it answers again the hold releases them at the recovery pacer's pace.
 */
export async function runOutageDemo(
  redeliver: Redeliver,
  endpoint: FlakyEndpoint,
  run: string,
  say: (line: string) => void,
): Promise<void> {
  say(
    `\noutage: ${endpoint.url}${OUTAGE_PATH} goes down (503 to everything) for ${seconds(DOWN_FOR_MS)} under ${OUTAGE_BATCHES} batches of ${OUTAGE_BATCH_SIZE} telemetry messages`,
  );
  endpoint.setDown(OUTAGE_PATH, true);
  const downAt = Date.now();
  const { ids, handedOver, holds, sent } = await submitBatches(redeliver, endpoint.url, run, say);
  for (const holdId of holds) {
    const s = await redeliver.client.workflow.getHandle(holdId).query(holdSummaryQuery);
    say(`  ${holdId}: ${s.waiting} messages wait for ${s.endpoint} to answer again`);
  }

  await new Promise((r) => setTimeout(r, Math.max(0, downAt + DOWN_FOR_MS - Date.now())));
  endpoint.setDown(OUTAGE_PATH, false);
  const upAt = Date.now();
  const whileDown = outageRequests(endpoint, downAt, upAt);
  const ownRetries = whileDown.filter((r) => handedOver.has(r.messageId ?? '') && (r.attempt ?? 1) > 1).length;
  say(
    `  while down (${seconds(upAt - downAt)}) the endpoint saw ${whileDown.length} requests: ${sent} first attempts before ` +
      `it looked down, ${whileDown.length - sent - ownRetries} probes from the hold (one at a time, at most one a second), ` +
      `${ownRetries} retries on their own; now it is back up`,
  );

  const accepted = await awaitDelivered(endpoint, ids);
  // the hold's messages and those on their own come back at different paces: the recovery pacer's, their own retry times
  const part = (own: boolean) => {
    const after = [...accepted].filter(([id]) => handedOver.has(id) === own).map(([, at]) => at - upAt);
    return { count: after.length, within: after.length > 0 ? seconds(Math.max(...after)) : '-' };
  };
  const [hold, own] = [part(false), part(true)];
  say(
    `  outage: ${accepted.size} of ${ids.size} delivered after the endpoint came back: the hold's ${hold.count} within ${hold.within}` +
      (handedOver.size > 0 ? `, the ${own.count} on their own within ${own.within}` : ''),
  );
  say(`See it in the UI: the workflow ${[...holds].join(', ')} (type holdWorkflow): while messages wait, its details`);
  say('list which ones and until when; its history shows the probes, and the release once the endpoint answered.');
}
