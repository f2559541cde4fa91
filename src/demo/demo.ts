import type { DeliveryHandle, Redeliver } from '../client';
import type { DeliveryInput } from '../delivery/types';
import { startFlakyEndpoint } from './flaky-endpoint';

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
  } finally {
    await endpoint.close();
  }
}
