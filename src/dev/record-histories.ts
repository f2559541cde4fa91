/**
 * Records the delivery workflow's histories for the replay tests: runs every scenario on a fresh dev
 * server against the flaky endpoint and writes test/histories/deliveryWorkflow_<scenario>.json.
 * Run `npm run record-histories` after a workflow change that needs new fixtures (CONTRIBUTING.md). It
 * records the current paths only: keep a path recorded before a patch under a name of its own first
 * (`timers-*`, `stale-counts-*`, `activity-first-*`), or it is overwritten.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { Redeliver } from '../client';
import { statusQuery } from '../workflows/definitions';
import { endpointWorkflowId } from '../delivery/ids';
import type { DeliveryInput } from '../delivery/types';
import { startFlakyEndpoint } from '../demo/flaky-endpoint';
import { createWorker, installRuntime, runWorker } from '../worker';
import { startDevServer } from './dev-server';
import { recordSubscriptionHistories } from './record-mqtt-histories';
import { projectRoot } from './temporal-cli';

type Scenario = {
  name: string;
  input: (url: string) => Omit<DeliveryInput, 'tenant' | 'device' | 'payload'>;
  act?: (r: Redeliver, id: string) => Promise<void>;
  historyLimit?: number;
  /** What the history must show, when chance decides it: recorded again (another message id) until it does. */
  shows?: (events: HistoryEvent[]) => boolean;
};

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const SHOW_TRIES = 30;

const until = async (r: Redeliver, id: string, state: string) => {
  while ((await r.getHandle(id).status()).state !== state) await new Promise((res) => setTimeout(res, 50));
};
const LONG_WAIT = { jitter: 'none', initial: '1m', min: '1m', max: '1m' } as const;

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
  {
    // a status query while the first attempt (a local activity) runs can make the SDK complete the first
    // workflow task with the attempt's marker, and handle its failure in the next task
    name: 'query-during-first-attempt',
    input: (url) => ({ kind: 'event', target: `${url}/queried?fail=1&status=503`, policy: LONG_WAIT }),
    act: async (r, id) => {
      // back to back from the start, four at a time: one of them may come while the first attempt runs
      const workflow = r.client.workflow.getHandle(id);
      const poll = async () => {
        while ((await workflow.query(statusQuery)).state !== 'waiting');
      };
      await Promise.all([poll(), poll(), poll(), poll()]);
      await r.getHandle(id).retryNow();
    },
    shows: (events) => {
      const marker = events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
      return marker > 0 && events[marker + 1]?.workflowTaskScheduledEventAttributes != null;
    },
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

/** Runs a scenario's delivery to its end, again under another message id until its history shows what it is for. */
async function deliverScenario(redeliver: Redeliver, scenario: Scenario, url: string) {
  for (let i = 0; ; i++) {
    const handle = await redeliver.submit({
      ...scenario.input(url),
      tenant: 'fixtures',
      device: 'device-1',
      messageId: i === 0 ? scenario.name : `${scenario.name}-${i}`,
      payload: { n: 1 },
    } as DeliveryInput);
    await scenario.act?.(redeliver, handle.deliveryId);
    const result = await handle.result();
    if (!scenario.shows || scenario.shows((await handle.workflow.fetchHistory()).events ?? [])) return { handle, result };
    if (i + 1 === SHOW_TRIES) throw new Error(`${scenario.name}: ${SHOW_TRIES} tries, and no history shows what the scenario is for`);
  }
}

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
  const connected = await Redeliver.connect({ address: server.address, taskQueue: 'record-histories' });
  try {
    for (const scenario of SCENARIOS.filter((s) => only.length === 0 || only.includes(s.name))) {
      const redeliver = scenario.historyLimit
        ? new Redeliver(connected.client, { taskQueue: 'record-histories', historyLimit: scenario.historyLimit })
        : connected;
      const { handle, result } = await deliverScenario(redeliver, scenario, endpoint.url);
      // every run of the delivery: one, or a chain when it continued as new
      const runs: string[] = [];
      for await (const e of connected.client.workflow.list({ query: `WorkflowId = '${handle.deliveryId}'` })) runs.unshift(e.runId);
      const files: string[] = [];
      for (const [i, runId] of runs.entries()) {
        const history = await connected.client.workflow.getHandle(handle.deliveryId, runId).fetchHistory();
        const suffix = runs.length === 1 ? '' : i === 0 ? '-first-run' : i === runs.length - 1 ? '-last-run' : undefined;
        if (suffix === undefined) continue;
        const file = path.join(outDir, `deliveryWorkflow_${scenario.name}${suffix}.json`);
        writeFileSync(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
        files.push(path.relative(projectRoot(), file));
      }
      console.log(`${scenario.name}: ${result.outcome} after ${result.attempts} attempt(s) → ${files.join(', ')}`);
    }
    // the endpoint's workflow, fed by the worker's reports of the attempts above (it runs on: its history so far)
    if (only.length === 0 || only.includes('endpoint')) {
      await new Promise((res) => setTimeout(res, 4_000));
      const history = await connected.client.workflow
        .getHandle(endpointWorkflowId(new URL(endpoint.url).host, 'record-histories'))
        .fetchHistory();
      const file = path.join(outDir, 'endpointWorkflow_reports.json');
      writeFileSync(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
      console.log(`endpoint: ${history.events?.length} events → ${path.relative(projectRoot(), file)}`);
    }
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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
