/**
 * Records the delivery workflow's histories for the replay tests: runs every scenario on a fresh dev
 * server against the flaky endpoint and writes test/histories/deliveryWorkflow_<scenario>.json.
 * Run `npm run record-histories` after a workflow change that needs new fixtures (CONTRIBUTING.md).
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Redeliver } from '../client';
import type { DeliveryInput } from '../delivery/types';
import { startFlakyEndpoint } from '../demo/flaky-endpoint';
import { createWorker, installRuntime } from '../worker';
import { startDevServer } from './dev-server';
import { projectRoot } from './temporal-cli';

type Scenario = { name: string; input: (url: string) => Omit<DeliveryInput, 'tenant' | 'device' | 'payload'>; act?: (r: Redeliver, id: string) => Promise<void> };

const SCENARIOS: Scenario[] = [
  { name: 'delivered-at-once', input: (url) => ({ kind: 'event', target: `${url}/ok` }) },
  { name: 'delivered-after-retries', input: (url) => ({ kind: 'telemetry', target: `${url}/flaky?fail=2&status=503` }) },
  { name: 'delivered-after-retry-after', input: (url) => ({ kind: 'event', target: `${url}/throttled?fail=1&status=429&retryAfter=1` }) },
  { name: 'rejected', input: (url) => ({ kind: 'event', target: `${url}/bad?fail=99&status=400` }) },
  { name: 'dropped', input: (url) => ({ kind: 'telemetry', qos: 0, target: `${url}/flaky?fail=1&status=503` }) },
  { name: 'exhausted', input: (url) => ({ kind: 'event', target: `${url}/down?fail=99&status=500`, policy: { maxAttempts: 3 } }) },
  { name: 'expired', input: (url) => ({ kind: 'event', target: `${url}/down?fail=99&status=504`, policy: { maxAge: '1s', min: '400ms', jitter: 'none', initial: '400ms' } }) },
  {
    name: 'cancelled',
    input: (url) => ({ kind: 'event', target: `${url}/down?fail=99&status=503`, policy: { min: '1m', max: '1m' } }),
    act: async (r, id) => {
      const handle = r.getHandle(id);
      while ((await handle.status()).state !== 'waiting') await new Promise((res) => setTimeout(res, 100));
      await handle.cancel();
    },
  },
];

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const outDir = path.join(projectRoot(), 'test', 'histories');
  mkdirSync(outDir, { recursive: true });
  installRuntime();
  const server = await startDevServer({ port: 7299, uiPort: null });
  const endpoint = await startFlakyEndpoint();
  const worker = await createWorker({ address: server.address, taskQueue: 'record-histories' });
  const running = worker.run();
  const redeliver = await Redeliver.connect({ address: server.address, taskQueue: 'record-histories' });
  try {
    for (const scenario of SCENARIOS.filter((s) => only.length === 0 || only.includes(s.name))) {
      const handle = await redeliver.submit({ ...scenario.input(endpoint.url), tenant: 'fixtures', device: 'device-1', messageId: scenario.name, payload: { n: 1 } } as DeliveryInput);
      await scenario.act?.(redeliver, handle.deliveryId);
      const result = await handle.result();
      const history = await handle.workflow.fetchHistory();
      const file = path.join(outDir, `deliveryWorkflow_${scenario.name}.json`);
      writeFileSync(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
      console.log(`${scenario.name}: ${result.outcome} after ${result.attempts} attempt(s) → ${path.relative(projectRoot(), file)}`);
    }
  } finally {
    await redeliver.close();
    worker.shutdown();
    await running;
    await endpoint.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
