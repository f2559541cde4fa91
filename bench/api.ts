import { randomUUID } from 'node:crypto';
import { Redeliver } from '../src/client/index';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { forkWorkerProcess, round, type BenchServer, type WorkerProcess } from './harness';
import type { LoadRun } from './load-process';
import { benchMessage } from './volume-message';
import { freePort } from '../src/dev/ports';

/** How many messages are accepted, and how they are sent. */
export interface ApiSizes {
  messages: number;
  /** Messages per batch: per HTTP request, and per batch of submitBatch. */
  batchSize: number;
  /** HTTP requests in flight at once. */
  connections: number;
}

export interface ApiRow {
  /** `client-api`: Redeliver.submitBatch in this process; `http-api`: arrays POSTed to `redeliver serve`; `load-alone`: the same POSTs to the sink. */
  system: 'client-api' | 'http-api' | 'load-alone';
  messages: number;
  perSecond: number;
  seconds: number;
  /** CPU per message: of whoever submits (this process, or the load generator), of the API server, of the dev server. */
  producerCpuMsPerMessage: number;
  apiCpuMsPerMessage: number | null;
  serverCpuMsPerMessage: number | null;
}

/**
 * Messages accepted a second: until each batch is durably started (202 from the API, submitBatch resolved), no
 * worker polling (what is measured is the accepting, not the delivering). The client API's submitBatch and the
 * HTTP API in the same run, on the same dev server; the load generator alone against the sink, which answers
 * 202 at once, shows what it can send.
 */
export async function apiThroughput(bench: BenchServer, sink: FlakyEndpoint, sizes: ApiSizes): Promise<ApiRow[]> {
  const rows = [await clientApi(bench, sink, sizes)];
  const key = `bench-${randomUUID()}`;
  const port = await freePort();
  const taskQueue = `api-http-${randomUUID().slice(0, 6)}`;
  const api = await forkWorkerProcess('api-process.js', [bench.server.address, taskQueue, String(port), key]);
  const load = await forkWorkerProcess('load-process.js', [`http://127.0.0.1:${port}`, String(sizes.connections)]);
  try {
    rows.push(await httpRun(bench, { load, api }, sizes, { path: '/v1/deliveries', sinkUrl: sink.url, key }));
  } finally {
    await load.stop();
    await api.stop();
  }
  const alone = await forkWorkerProcess('load-process.js', [sink.url, String(sizes.connections)]);
  try {
    rows.push(await httpRun(bench, { load: alone }, sizes, { path: '/api/load-alone', sinkUrl: sink.url, key }));
  } finally {
    await alone.stop();
  }
  sink.received.length = 0;
  return rows;
}

async function clientApi(bench: BenchServer, sink: FlakyEndpoint, sizes: ApiSizes): Promise<ApiRow> {
  const redeliver = new Redeliver(bench.client, { taskQueue: `api-client-${randomUUID().slice(0, 6)}` });
  const inputs = Array.from({ length: sizes.messages }, (_, i) => benchMessage(sink.url, '/api/client', i));
  const cpu = process.cpuUsage();
  const server = bench.serverCpuMs();
  const started = performance.now();
  await redeliver.submitBatch(inputs, { maxMessages: sizes.batchSize });
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return row('client-api', sizes.messages, seconds, {
    producer: (used.user + used.system) / 1000,
    api: null,
    server: bench.serverCpuMs() - server,
  });
}

async function httpRun(
  bench: BenchServer,
  processes: { load: WorkerProcess; api?: WorkerProcess },
  sizes: ApiSizes,
  target: { path: string; sinkUrl: string; key: string },
): Promise<ApiRow> {
  const batches = { size: sizes.batchSize, sinkUrl: target.sinkUrl, sinkPath: '/api/http', authorization: `Bearer ${target.key}` };
  const run: LoadRun = { path: target.path, messages: sizes.messages, batches };
  const before = { load: await processes.load.stats(), api: await processes.api?.stats(), server: bench.serverCpuMs() };
  const answer = await new Promise<{ seconds?: number; error?: string }>((resolve) => {
    processes.load.child.once('message', (m) => resolve(m as { seconds?: number; error?: string }));
    processes.load.child.send(run);
  });
  if (answer.seconds === undefined) throw new Error(`load: ${answer.error ?? 'no answer'}`);
  const after = { load: await processes.load.stats(), api: await processes.api?.stats() };
  return row(processes.api ? 'http-api' : 'load-alone', sizes.messages, answer.seconds, {
    producer: after.load.cpuMs - before.load.cpuMs,
    api: after.api && before.api ? after.api.cpuMs - before.api.cpuMs : null,
    server: processes.api ? bench.serverCpuMs() - before.server : null,
  });
}

function row(
  system: ApiRow['system'],
  messages: number,
  seconds: number,
  cpuMs: { producer: number; api: number | null; server: number | null },
): ApiRow {
  const per = (ms: number | null) => (ms === null ? null : round(ms / messages, 3));
  return {
    system,
    messages,
    perSecond: round(messages / seconds, 1),
    seconds: round(seconds, 2),
    producerCpuMsPerMessage: per(cpuMs.producer)!,
    apiCpuMsPerMessage: per(cpuMs.api),
    serverCpuMsPerMessage: per(cpuMs.server),
  };
}
