/**
 * The recorded history of an endpoint's workflow that announces operational events (`npm run record-histories`
 * calls this; docs/endpoint-health.md, "Operational events"): an endpoint of its own fails and recovers, dead
 * letters are told, an operator disables it and enables it again. Each event is an `announceEvents` activity behind
 * the `operational-events` patch: endpointWorkflow_events.json.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Redeliver } from '../client/index';
import { endpointWorkflowId, tenantEventsWorkflowId } from '../contract';
import { startFlakyEndpoint } from '../demo/flaky-endpoint';
import { historyFileText } from '../temporal/sdk-adapter';

export async function recordEventHistories(redeliver: Redeliver, outDir: string, only: string[]): Promise<void> {
  if (only.length > 0 && !only.includes('endpoint-events')) return;
  const endpoint = await startFlakyEndpoint();
  try {
    const policy = { jitter: 'none', initial: '500ms', min: '500ms', max: '500ms' } as const;
    const message = (n: number, query: string) => ({
      kind: 'event' as const,
      tenant: 'fixtures',
      device: 'device-1',
      messageId: `events-${n}`,
      target: `${endpoint.url}/events?${query}`,
      payload: { n },
      policy,
    });
    // failing (503s), then recovering; then three dead letters (400s), told in one event
    const failing = await redeliver.submitMany([1, 2, 3, 4].map((n) => message(n, 'fail=8&status=503')));
    await Promise.all(failing.map((h) => h.result()));
    const refused = await redeliver.submitMany([5, 6, 7].map((n) => message(n, 'fail=99&status=400')));
    await Promise.all(refused.map((h) => h.result()));
    // reported within a second, recorded 3 s after
    await new Promise((res) => setTimeout(res, 6_000));
    const handle = redeliver.endpoint(endpoint.url);
    await handle.disable('fixture');
    await handle.resume();
    const history = await redeliver.client.workflow.getHandle(endpointWorkflowId(handle.endpoint, 'record-histories')).fetchHistory();
    const file = path.join(outDir, 'endpointWorkflow_events.json');
    writeFileSync(file, historyFileText(history));
    console.log(`endpoint-events: ${history.events?.length} events → ${path.relative(process.cwd(), file)}`);
  } finally {
    await endpoint.close();
  }
}

/**
 * A tenant's dead-letter aggregator (tenantEventsWorkflow): dead letters on two endpoints (one host,
 * two ports) told in one event at once, then the next ones together a window later: tenantEventsWorkflow_dead-letters.json.
 */
export async function recordTenantEventHistories(redeliver: Redeliver, outDir: string, only: string[]): Promise<void> {
  if (only.length > 0 && !only.includes('tenant-events')) return;
  const endpoints = [await startFlakyEndpoint(), await startFlakyEndpoint()];
  try {
    const refused = (n: number) =>
      redeliver.submit({
        kind: 'event',
        tenant: 'fixtures-tenant',
        device: 'device-1',
        messageId: `dead-${n}`,
        target: `${endpoints[n % 2]!.url}/dead?fail=99&status=400`,
        payload: { n },
      });
    await Promise.all((await Promise.all([1, 2].map(refused))).map((h) => h.result()));
    // the first event goes at once; these wait for the window
    await new Promise((res) => setTimeout(res, 3_000));
    await Promise.all((await Promise.all([3, 4, 5].map(refused))).map((h) => h.result()));
    await new Promise((res) => setTimeout(res, 33_000));
    const history = await redeliver.client.workflow.getHandle(tenantEventsWorkflowId('fixtures-tenant', 'record-histories')).fetchHistory();
    const file = path.join(outDir, 'tenantEventsWorkflow_dead-letters.json');
    writeFileSync(file, historyFileText(history));
    console.log(`tenant-events: ${history.events?.length} events → ${path.relative(process.cwd(), file)}`);
  } finally {
    await Promise.all(endpoints.map((e) => e.close()));
  }
}
