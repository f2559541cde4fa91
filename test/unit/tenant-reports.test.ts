import type { Client } from '@temporalio/client';
import { EndpointReporter } from '../../src/worker-services/endpoint-reporter';
import { TenantDeadLetters, type TenantReport } from '../../src/endpoints/tenant-events';
import type { EndpointReport } from '../../src/endpoints/types';

// A worker's reports of a tenant's dead letters (src/worker-services/endpoint-reporter.ts) reach the tenant's
// workflow (src/workflows/tenant-events.ts) counted once, though a report whose answer was lost goes again.

const T0 = Date.parse('2026-11-23T12:00:00Z');

/** A client whose signal-with-start lands, and whose answer is lost while `lose` says so. */
function fakeClient(lose: () => boolean) {
  const signals: { workflowId: string; report: unknown }[] = [];
  const client = {
    options: { namespace: 'default' },
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    workflow: {
      signalWithStart: async (_type: string, o: { workflowId: string; signalArgs: unknown[] }) => {
        signals.push({ workflowId: o.workflowId, report: o.signalArgs[0] });
        if (lose()) throw new Error('deadline exceeded');
        return {};
      },
    },
  };
  return { client: client as unknown as Client, signals };
}

test('a report whose answer was lost goes again under its id, and counts once; later dead letters go in the next', async () => {
  let lost = true;
  const { client, signals } = fakeClient(() => lost);
  const reporter = new EndpointReporter(client, 'q', { identity: 'w1' });
  reporter.deadLettered('a.example.com', 'd1', 'rejected', T0, 'acme');
  reporter.deadLettered('b.example.com', 'd2', 'expired', T0 + 1, 'acme');
  await reporter.flush();
  reporter.deadLettered('a.example.com', 'd3', 'rejected', T0 + 2, 'acme');
  lost = false;
  await reporter.flush();
  await reporter.flush();

  const toTenant = signals.filter((s) => s.workflowId === 'events/q/acme').map((s) => s.report as TenantReport);
  expect(toTenant.map((r) => r.id)).toEqual(['w1/1', 'w1/1', 'w1/2']);
  const tenant = new TenantDeadLetters('acme');
  expect(toTenant.map((r) => tenant.report(r, T0 + 3))).toEqual([true, false, true]);
  const [event] = tenant.take(T0 + 3);
  expect(event!.data).toMatchObject({ count: 3, endpoints: { 'a.example.com': 2, 'b.example.com': 1 }, tenant: 'acme' });
});

test("the alerts' own dead letters (tenant redeliver) are reported to their endpoint's workflow, not a tenant's", async () => {
  const { client, signals } = fakeClient(() => false);
  const reporter = new EndpointReporter(client, 'q', { identity: 'w1' });
  reporter.deadLettered('ops.example.com', 'd1', 'expired', T0, 'redeliver');
  await reporter.flush();
  expect(signals.map((s) => s.workflowId)).toEqual(['endpoint/q/ops.example.com']);
  expect((signals[0]!.report as EndpointReport).deadLetters?.count).toBe(1);
});
