/**
 * Records the delivery workflow's histories for the replay tests: runs every scenario on a fresh dev
 * server against the flaky endpoint and writes test/histories/deliveryWorkflow_<scenario>.json.
 * Run `npm run record-histories` after a workflow change that needs new fixtures (CONTRIBUTING.md).
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Redeliver } from '../client/index';
import { endpointWorkflowId } from '../contract';
import type { DeliveryInput } from '../delivery/types';
import { startFlakyEndpoint } from '../demo/flaky-endpoint';
import { createWorker, installRuntime, runWorker } from '../worker';
import { recordBatchHistories } from './record-batch-histories';
import { startDevServer } from './dev-server';
import { freePort } from './ports';
import { recordEventHistories, recordTenantEventHistories } from './record-event-histories';
import { recordHoldHistories } from './record-hold-histories';
import { recordSubscriptionHistories } from './record-mqtt-histories';
import { recordOrderingHistories } from './record-ordering-histories';
import { projectRoot } from './temporal-cli';
import { historyFileText } from '../temporal/sdk-adapter';

type Scenario = {
  name: string;
  input: (url: string) => Omit<DeliveryInput, 'tenant' | 'device' | 'payload'>;
  act?: (r: Redeliver, id: string) => Promise<void>;
  historyLimit?: number;
  /** Before the delivery is submitted, and after it ended (the endpoint's limits: every scenario shares the endpoint). */
  setup?: (r: Redeliver, url: string) => Promise<void>;
  teardown?: (r: Redeliver, url: string) => Promise<void>;
};

const until = async (r: Redeliver, id: string, state: string) => {
  while ((await r.getHandle(id).status()).state !== state) await new Promise((res) => setTimeout(res, 50));
};
const LONG_WAIT = { jitter: 'none', initial: '1m', min: '1m', max: '1m' } as const;

/** The endpoint limited to one attempt per `seconds`, its slot taken by a delivery of its own: the scenario's first attempt must wait. */
const limitedTo = (seconds: number) => async (r: Redeliver, url: string) => {
  await r.endpoint(url).set({ rate: 1 / seconds });
  const warmUp = async () =>
    (await r.submit({ kind: 'event', tenant: 'fixtures', device: 'device-1', target: `${url}/ok`, payload: {} })).result();
  // the worker reads the endpoint's limits anew when what it knows is 2 s old, while an attempt goes on what it knew:
  // the first warm-up has it read them, the second takes the slot
  await new Promise((res) => setTimeout(res, 3_000));
  await warmUp();
  await new Promise((res) => setTimeout(res, 1_000));
  await warmUp();
};
const unlimited = async (r: Redeliver, url: string) => {
  await r.endpoint(url).set({ rate: null });
  await new Promise((res) => setTimeout(res, 3_000));
};

const SCENARIOS: Scenario[] = [
  { name: 'delivered-at-once', input: (url) => ({ kind: 'event', target: `${url}/ok` }) },
  { name: 'delivered-after-retries', input: (url) => ({ kind: 'telemetry', target: `${url}/flaky?fail=2&status=503` }) },
  { name: 'delivered-after-retry-after', input: (url) => ({ kind: 'event', target: `${url}/throttled?fail=1&status=429&retryAfter=1` }) },
  { name: 'rejected', input: (url) => ({ kind: 'event', target: `${url}/bad?fail=99&status=400` }) },
  { name: 'dropped', input: (url) => ({ kind: 'telemetry', qos: 0, target: `${url}/flaky?fail=1&status=503` }) },
  { name: 'exhausted', input: (url) => ({ kind: 'event', target: `${url}/down?fail=99&status=500`, policy: { maxAttempts: 3 } }) },
  {
    name: 'expired',
    input: (url) => ({
      kind: 'event',
      target: `${url}/down?fail=99&status=504`,
      policy: { maxAge: '1s', min: '400ms', jitter: 'none', initial: '400ms' },
    }),
  },
  {
    name: 'cancelled',
    input: (url) => ({ kind: 'event', target: `${url}/down?fail=99&status=503`, policy: { min: '1m', max: '1m' } }),
    act: async (r, id) => {
      await until(r, id, 'waiting');
      await r.getHandle(id).cancel();
    },
  },
  {
    name: 'retry-now',
    input: (url) => ({ kind: 'event', target: `${url}/retry-now?fail=1&status=503`, policy: LONG_WAIT }),
    act: async (r, id) => {
      await until(r, id, 'waiting');
      await r.getHandle(id).retryNow();
    },
  },
  {
    name: 'paused-resumed',
    input: (url) => ({ kind: 'event', target: `${url}/paused?fail=1&status=503`, policy: LONG_WAIT }),
    act: async (r, id) => {
      await until(r, id, 'waiting');
      await r.getHandle(id).pause('maintenance');
      await until(r, id, 'paused');
      await r.getHandle(id).resume();
      await r.getHandle(id).retryNow();
    },
  },
  // MQTT without a broker: what the workflow does with a refused connection and an unknown credential
  { name: 'mqtt-dropped', input: () => ({ kind: 'telemetry', qos: 0, target: 'mqtt://127.0.0.1:1' }) },
  { name: 'mqtt-rejected', input: () => ({ kind: 'event', target: { url: 'mqtt://127.0.0.1:1', credential: 'not-on-this-worker' } }) },
  {
    // the error class changes on every attempt (server, throttled): the workflow wakes to record each
    name: 'class-changed',
    input: (url) => ({
      kind: 'event',
      target: `${url}/classes?fail=3&status=502,429`,
      policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
    }),
  },
  // the endpoint's limits hold the first attempt on the server (input.limited), then it goes
  { name: 'limits-held', input: (url) => ({ kind: 'event', target: `${url}/ok` }), setup: limitedTo(5), teardown: unlimited },
  {
    // no room at the endpoint before the delivery's max age: it ends expired, unsent
    name: 'limits-unsent',
    input: (url) => ({ kind: 'event', target: `${url}/ok`, policy: { maxAge: '2s' } }),
    setup: limitedTo(100),
    teardown: unlimited,
  },
  {
    name: 'continued-as-new',
    input: (url) => ({
      kind: 'telemetry',
      target: `${url}/long?fail=4&status=502,429`,
      policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
    }),
    historyLimit: 20,
  },
];

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const outDir = path.join(projectRoot(), 'test', 'histories');
  mkdirSync(outDir, { recursive: true });
  installRuntime();
  const server = await startDevServer({ port: 7299, uiPort: null });
  const endpoint = await startFlakyEndpoint();
  // the flaky endpoint is on loopback: open it explicitly; with REDELIVER_ENCRYPTION_KEYS set, worker and
  // client both encrypt, and the replay tests need the same keys to read what is recorded
  const worker = await createWorker({ address: server.address, taskQueue: 'record-histories', allowAddresses: ['loopback'] });
  const running = runWorker(worker);
  // the delivery scenarios record a delivery's workflow from its start (as an ordered message's, a redrive's, or any
  // single submit's with REDELIVER_SINGLE_SUBMIT=workflow); the standalone first attempt's hand-over is a batch scenario
  const connected = await Redeliver.connect({ address: server.address, taskQueue: 'record-histories', singleSubmit: 'workflow' });
  try {
    for (const scenario of SCENARIOS.filter((s) => only.length === 0 || only.includes(s.name))) {
      const redeliver = scenario.historyLimit
        ? new Redeliver(connected.client, { taskQueue: 'record-histories', historyLimit: scenario.historyLimit, singleSubmit: 'workflow' })
        : connected;
      await scenario.setup?.(redeliver, endpoint.url);
      const handle = await redeliver.submit({
        ...scenario.input(endpoint.url),
        tenant: 'fixtures',
        device: 'device-1',
        messageId: scenario.name,
        payload: { n: 1 },
      } as DeliveryInput);
      await scenario.act?.(redeliver, handle.deliveryId);
      const result = await handle.result();
      await scenario.teardown?.(redeliver, endpoint.url);
      // every run of the delivery: one, or a chain when it continued as new
      const runs: string[] = [];
      for await (const e of connected.client.workflow.list({ query: `WorkflowId = '${handle.deliveryId}'` })) runs.unshift(e.runId);
      const files: string[] = [];
      for (const [i, runId] of runs.entries()) {
        const history = await connected.client.workflow.getHandle(handle.deliveryId, runId).fetchHistory();
        const suffix = runs.length === 1 ? '' : i === 0 ? '-first-run' : i === runs.length - 1 ? '-last-run' : undefined;
        if (suffix === undefined) continue;
        const file = path.join(outDir, `deliveryWorkflow_${scenario.name}${suffix}.json`);
        writeFileSync(file, historyFileText(history));
        files.push(path.relative(projectRoot(), file));
      }
      console.log(`${scenario.name}: ${result.outcome} after ${result.attempts} attempt(s) → ${files.join(', ')}`);
    }
    // the endpoint's workflow, fed by the worker's reports of the attempts above (it runs on: its history so far);
    // the reports carry what its recording keeps (arrivals, retries, ends, the budget): endpointWorkflow_reports.json
    // is the same from before they did
    if (only.length === 0 || only.includes('endpoint')) {
      await new Promise((res) => setTimeout(res, 4_000));
      const history = await connected.client.workflow
        .getHandle(endpointWorkflowId(new URL(endpoint.url).host, 'record-histories'))
        .fetchHistory();
      const file = path.join(outDir, 'endpointWorkflow_recording.json');
      writeFileSync(file, historyFileText(history));
      console.log(`endpoint: ${history.events?.length} events → ${path.relative(projectRoot(), file)}`);
    }
    // an operator's limits on the endpoint: the updates, and the memo every worker reads them from
    if (only.length === 0 || only.includes('endpoint-settings')) {
      const handle = connected.endpoint(endpoint.url);
      await handle.set({ maxInFlight: 50, rate: '200/s' });
      await handle.set({ maxInFlight: null, rate: null });
      const history = await connected.client.workflow.getHandle(endpointWorkflowId(handle.endpoint, 'record-histories')).fetchHistory();
      const file = path.join(outDir, 'endpointWorkflow_settings.json');
      writeFileSync(file, historyFileText(history));
      console.log(`endpoint-settings: ${history.events?.length} events → ${path.relative(projectRoot(), file)}`);
    }
    // an endpoint that fails, then answers: its breaker opens (published in the memo) and closes (endpoint-breaker)
    if (only.length === 0 || only.includes('endpoint-breaker')) await recordBreaker(connected, outDir);
    // an endpoint that failed once and was sent nothing more: failing by time alone, then waiting (endpoint-wake-ahead)
    if (only.length === 0 || only.includes('endpoint-failing-by-time')) await recordFailingByTime(connected, outDir);
    // an endpoint whose workflow announces its operational events (operational-events)
    await recordEventHistories(connected, outDir, only);
    await recordTenantEventHistories(connected, outDir, only);
    // ordering keys: deliveries queued behind one another, and their key's sequencer
    await recordOrderingHistories(connected, endpoint.url, outDir, only);
    // batches: delivered at once, handed over to deliveries, an ordered message queued
    await recordBatchHistories(connected, endpoint.url, outDir, only);
    // outage holds: a hold released after the outage, a held message expired there, one taken out by a pause (hold)
    await recordHoldHistories(connected, outDir, only);
    // command subscriptions, and a delivery over MQTT (its command's response)
    await recordSubscriptionHistories(connected.client, 'record-histories', endpoint.url, outDir, only);
  } finally {
    await connected.close();
    worker.shutdown();
    await running;
    await endpoint.close();
    await server.stop();
  }
}

/** Deliveries to an endpoint of their own that fails a few times each: its workflow's breaker opens, then closes. */
async function recordBreaker(redeliver: Redeliver, outDir: string): Promise<void> {
  const failing = await startFlakyEndpoint();
  try {
    const policy = { jitter: 'none', initial: '500ms', min: '500ms', max: '500ms' } as const;
    await redeliver.endpoint(`${failing.url}/down`).set({ breaker: 'on' });
    const handles = await redeliver.submitMany(
      Array.from({ length: 5 }, (_, i) => ({
        kind: 'event' as const,
        tenant: 'fixtures',
        device: 'device-1',
        messageId: `breaker-${i}`,
        target: `${failing.url}/down?fail=8&status=503`,
        payload: { n: i },
        policy,
      })),
    );
    await Promise.all(handles.map((h) => h.result()));
    // its workflow records what was reported 3 s after: the recovery, and the breaker closing
    await new Promise((res) => setTimeout(res, 6_000));
    const history = await redeliver.client.workflow
      .getHandle(endpointWorkflowId(new URL(failing.url).host, 'record-histories'))
      .fetchHistory();
    const file = path.join(outDir, 'endpointWorkflow_breaker.json');
    writeFileSync(file, historyFileText(history));
    console.log(`endpoint-breaker: ${history.events?.length} events → ${path.relative(projectRoot(), file)}`);
  } finally {
    await failing.close();
  }
}

/** One attempt to a port nobody listens on, then silence: the endpoint's workflow turns it failing by time alone and waits. */
async function recordFailingByTime(redeliver: Redeliver, outDir: string): Promise<void> {
  const endpoint = `127.0.0.1:${await freePort()}`;
  const handle = await redeliver.submit({
    kind: 'telemetry',
    qos: 0,
    tenant: 'fixtures',
    device: 'device-1',
    messageId: 'failing-by-time',
    target: `http://${endpoint}/x`,
    payload: { n: 1 },
  });
  await handle.result();
  // reported within a second, recorded 3 s after, failing 5 s after the attempt; then a few seconds of waiting
  await new Promise((res) => setTimeout(res, 9_000));
  const history = await redeliver.client.workflow.getHandle(endpointWorkflowId(endpoint, 'record-histories')).fetchHistory();
  const file = path.join(outDir, 'endpointWorkflow_failing-by-time.json');
  writeFileSync(file, historyFileText(history));
  console.log(`endpoint-failing-by-time: ${history.events?.length} events → ${path.relative(projectRoot(), file)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
