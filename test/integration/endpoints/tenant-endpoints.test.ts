import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { endpointStatusQuery, endpointWorkflowId } from '../../../src/contract';
import type { DeliveryInput } from '../../../src/delivery/types';
import { freePort } from '../../support/ports';
import { startHarness, testAddress, type Harness } from '../../support/temporal';

/*
 * A tenant cannot exhaust endpoint workflows (docs/endpoint-health.md, "Endpoint workflows per tenant"): its
 * attempts open workflows for at most REDELIVER_MAX_ENDPOINTS_PER_TENANT distinct endpoints (here 2); beyond
 * that they still go, and their reports reach only a workflow that runs (here one an operator started). Other
 * tenants are not affected. Every endpoint is a loopback port nobody listens on: one failed attempt each.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness(testAddress(), { maxEndpointsPerTenant: 2 });
});
afterAll(async () => {
  await h?.stop();
});

const telemetry = (tenant: string, endpoint: string): DeliveryInput => ({
  kind: 'telemetry',
  qos: 0,
  tenant,
  device: `bound-${randomUUID().slice(0, 8)}`,
  messageId: randomUUID(),
  target: `http://${endpoint}/x`,
  payload: { t: 1 },
});

async function hasWorkflow(endpoint: string): Promise<boolean> {
  try {
    await h.client.workflow.getHandle(endpointWorkflowId(endpoint, h.taskQueue)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

test("a tenant's attempts open workflows for its bound of endpoints; beyond it, reports reach only running ones", async () => {
  const [a, b, c, d, e] = await Promise.all(Array.from({ length: 5 }, async () => `127.0.0.1:${await freePort()}`));
  // an operator looks after c: its workflow runs before any attempt
  await h.redeliver.endpoint(c!).set({ priority: 'fifo' });
  // one at a time, so that a and b are the tenant's first two
  for (const [tenant, endpoint] of [
    ['acme', a],
    ['acme', b],
    ['acme', c],
    ['acme', d],
    ['other', e],
  ] as const) {
    expect((await (await h.redeliver.submit(telemetry(tenant, endpoint!))).result()).attempts).toBe(1);
  }
  // a flush already under way may have left the last outcome for the next one
  await h.reporter!.flush();
  await h.reporter!.flush();

  expect(await Promise.all([a, b, c, d, e].map((endpoint) => hasWorkflow(endpoint!)))).toEqual([true, true, true, false, true]);
  // c's report reached the workflow the operator started; d's was dropped, counted
  const status = await h.client.workflow.getHandle(endpointWorkflowId(c!, h.taskQueue)).query(endpointStatusQuery, Date.now());
  expect(status.attemptsLastMinute).toBe(1);
  expect(h.reporter!.unopened).toBe(1);
}, 60_000);
