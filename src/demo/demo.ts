import type { DeliveryHandle, Redeliver } from '../client/index';
import type { DeliveryInput } from '../delivery/types';
import { startFlakyEndpoint } from './flaky-endpoint';
import { runOutageDemo } from './outage-demo';

/** What the demo sends, and what each should end as. */
function demoDeliveries(url: string, run: string): { input: DeliveryInput; expect: string }[] {
  const common = { tenant: 'demo', payload: { temperature: 21.5, unit: 'C' } };
  return [
    {
      expect: 'delivered after two 503s',
      input: {
        ...common,
        kind: 'telemetry',
        device: 'thermostat-1',
        messageId: `${run}-telemetry`,
        target: `${url}/telemetry?fail=2&status=503`,
      },
    },
    {
      expect: 'dropped: QoS 0 is sent once',
      input: {
        ...common,
        kind: 'telemetry',
        qos: 0,
        device: 'thermostat-2',
        messageId: `${run}-telemetry-qos0`,
        target: `${url}/telemetry?fail=1&status=503`,
      },
    },
    {
      expect: 'delivered after a 429 with Retry-After: 3',
      input: {
        ...common,
        kind: 'event',
        device: 'door-1',
        messageId: `${run}-event-throttled`,
        target: `${url}/event?fail=1&status=429&retryAfter=3`,
      },
    },
    {
      expect: 'rejected: 400 is not retried',
      input: { ...common, kind: 'event', device: 'door-2', messageId: `${run}-event-bad`, target: `${url}/event?fail=99&status=400` },
    },
    {
      expect: 'exhausted after 4 attempts of 503',
      input: {
        ...common,
        kind: 'event',
        device: 'door-3',
        messageId: `${run}-event-exhausted`,
        target: `${url}/event?fail=99&status=503`,
        policy: { maxAttempts: 4 },
      },
    },
    {
      expect: 'delivered after a 502',
      input: {
        ...common,
        kind: 'command-response',
        device: 'valve-1',
        messageId: `${run}-command-response`,
        target: `${url}/command/res/{tenant}/{device}/{requestId}?fail=1&status=502`,
        command: { requestId: `req-${run}`, status: 200 },
      },
    },
  ];
}

/** Messages in the demo's batch, and those of them whose first attempt gets a 503. */
const BATCH_SIZE = 50;
const FAIL_FIRST = new Set([17, 38]);

/** The demo's batch: telemetry from five meters, each message a line of a batch. */
function batchMessages(url: string, run: string): DeliveryInput[] {
  return Array.from({ length: BATCH_SIZE }, (_, n) => ({
    kind: 'telemetry',
    tenant: 'demo',
    device: `meter-${(n % 5) + 1}`,
    messageId: `${run}-batch-${String(n + 1).padStart(2, '0')}`,
    target: `${url}/telemetry${FAIL_FIRST.has(n + 1) ? '?fail=1&status=503' : ''}`,
    payload: { kwh: 1000 + n },
  }));
}

/**
 * A batch, as a producer with volume sends one: one workflow makes every message's first attempt, and only
 * the messages that fail get a workflow of their own.
 */
async function runBatchDemo(redeliver: Redeliver, url: string, run: string, say: (line: string) => void): Promise<void> {
  const submission = await redeliver.submitBatch(batchMessages(url, run), { batchId: `telemetry-${run}` });
  const batch = submission.batches[0]!;
  say(`\nsubmitted a batch of ${batch.messages} telemetry messages in one workflow, ${batch.workflowId}`);
  say(`  (expect: ${batch.messages - FAIL_FIRST.size} delivered at once, ${FAIL_FIRST.size} get a 503 and become deliveries of their own)`);
  const result = await batch.result();
  say(`  first attempts: ${result.delivered} delivered at once, ${result.handedOver} handed over to deliveries of their own`);
  const handedOver = new Set(result.results.filter((r) => r.disposition === 'handed-over').map((r) => r.deliveryId));
  const outcomes = await submission.outcomes();
  for (const o of outcomes.filter((o) => handedOver.has(o.deliveryId))) {
    say(`  handed over: ${o.deliveryId} ${o.outcome} after ${o.attempts} attempts (the first made by the batch)`);
  }
  const delivered = outcomes.filter((o) => o.outcome === 'delivered').length;
  say(`  batch: ${delivered} of ${outcomes.length} delivered`);
  say(`See it in the UI: the workflow ${batch.workflowId} (its result lists every message's code), and the`);
  say(`handed-over deliveries, whose titles end "(from ${batch.workflowId})".`);
}

/** Delivers the demo messages to a flaky local endpoint, printing each change of state and each outcome. */
export async function runDemo(redeliver: Redeliver, say: (line: string) => void): Promise<void> {
  const endpoint = await startFlakyEndpoint();
  try {
    say(`\nflaky demo endpoint at ${endpoint.url}`);
    const run = new Date()
      .toISOString()
      .replace(/[-:.TZ]/g, '')
      .slice(0, 14);
    const planned = demoDeliveries(endpoint.url, run);
    const handles: DeliveryHandle[] = [];
    for (const { input, expect } of planned) {
      const handle = await redeliver.submit(input);
      handles.push(handle);
      say(`submitted ${handle.deliveryId} (expect: ${expect})`);
    }
    const last = new Map<string, string>();
    const done = new Set<string>();
    // follow the deliveries until each has ended, printing what changes
    while (done.size < handles.length) {
      for (const handle of handles) {
        if (done.has(handle.deliveryId)) continue;
        const status = await handle.status();
        if (last.get(handle.deliveryId) !== status.summary) {
          last.set(handle.deliveryId, status.summary);
          say(`  ${handle.deliveryId}: ${status.summary}`);
        }
        if (!['pending', 'attempting', 'waiting'].includes(status.state)) done.add(handle.deliveryId);
      }
      if (done.size < handles.length) await new Promise((r) => setTimeout(r, 200));
    }
    say('\noutcomes:');
    let attempts = 0;
    for (const handle of handles) {
      const result = await handle.result();
      attempts += result.attempts;
      say(`  ${result.outcome.padEnd(9)} ${String(result.attempts).padStart(2)} attempt(s)  ${handle.deliveryId}`);
    }
    // the endpoint as operators see it: the workers report every attempt to its workflow about once a second
    const host = new URL(endpoint.url).host;
    for (let tries = 0; tries < 20; tries++) {
      const [view] = await redeliver.endpoints(host).catch(() => []);
      if (view && (view.attemptsLastMinute >= attempts || tries === 19)) {
        say(`
endpoint ${host}: ${view.state}, ${view.attemptsLastMinute} attempts in the last minute, ${Math.round(view.failureRate * 100)}% failed (redeliver endpoints, redeliver downtime)`);
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    await runBatchDemo(redeliver, endpoint.url, run, say);
    await runOutageDemo(redeliver, endpoint, run, say);
  } finally {
    await endpoint.close();
  }
}
