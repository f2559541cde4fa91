import { randomUUID } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { BRIDGE_USER, bridgeCredential, connectGateway, publishMany, startBridgeBroker, type Publication } from '../test/support/bridge';
import type { Mosquitto } from '../test/support/mosquitto';
import type { BridgeSetup } from './bridge-process';
import { forkWorkerProcess, round, startWorkerProcess, type BenchServer, type WorkerProcess } from './harness';
import { redeliverBatchVolume } from './redeliver-volume';
import { waitForDelivered } from './volume-row';

/**
 * Messages/s through `redeliver bridge` (src/bridge) beside the client API's submitBatch, in the same run, to the
 * same sink; and the publisher alone (the same messages to a plain MQTT subscriber), the ceiling the broker and
 * the publisher set.
 */
export interface BridgeRow {
  system: 'publisher-alone' | 'bridge' | 'bridge-backlog' | 'client-submitBatch';
  messages: number;
  /** From the first publish (submit) until the sink has answered every message with a 2xx; the publisher alone: until its subscriber has them all. */
  seconds: number;
  perSecond: number;
  /** Durably accepted: until the bridge had acknowledged every message to the broker, or submitBatch returned. */
  acceptedPerSecond: number;
  /** CPU of the bridge's process (or the subscriber's, or the submitting one's: not measured there). */
  bridgeCpuMsPerMessage?: number;
  workerCpuMsPerMessage?: number;
  /** Batches started (each costs the dev server about the same whatever its size). */
  batches?: number;
}

export async function bridgeThroughput(bench: BenchServer, sink: FlakyEndpoint, messages: number): Promise<BridgeRow[]> {
  const broker = await startBridgeBroker();
  try {
    const rows: BridgeRow[] = [await publisherAlone(broker, messages)];
    console.log(`  bridge publisher-alone ${messages}: ${rows.at(-1)!.perSecond}/s`);
    for (const mode of ['live', 'backlog'] as const) {
      rows.push(await throughBridge(bench, sink, broker, messages, mode));
      console.log(`  ${rows.at(-1)!.system} ${messages}: ${rows.at(-1)!.perSecond}/s (accepted ${rows.at(-1)!.acceptedPerSecond}/s)`);
      sink.received.length = 0;
    }
    const client = await redeliverBatchVolume(bench, sink, messages);
    rows.push({
      system: 'client-submitBatch',
      messages,
      seconds: client.seconds,
      perSecond: client.perSecond,
      acceptedPerSecond: round(messages / client.acceptedSeconds, 1),
      workerCpuMsPerMessage: client.workerCpuMsPerMessage,
      batches: Math.ceil(messages / 500),
    });
    console.log(`  bridge client-submitBatch ${messages}: ${client.perSecond}/s (accepted ${rows.at(-1)!.acceptedPerSecond}/s)`);
    sink.received.length = 0;
    return rows;
  } finally {
    await broker.stop();
  }
}

/** Message `i`: telemetry from one of 100 devices of one tenant, with its id in the user property, as benchMessage. */
const publication = (i: number): Publication => ({
  topic: `telemetry/bench/d${i % 100}`,
  payload: JSON.stringify({ id: i, temperature: 21.5 }),
  userProperties: { 'message-id': `m${i}` },
});

/** The same messages to a plain subscriber that acknowledges each at once (mqtt.js's own PUBACK). */
async function publisherAlone(broker: Mosquitto, messages: number): Promise<BridgeRow> {
  const subscriber = await mqtt.connectAsync(broker.url, {
    protocolVersion: 5,
    username: BRIDGE_USER.username,
    password: BRIDGE_USER.password,
    clientId: `alone${randomUUID().slice(0, 8)}`,
    reconnectPeriod: 0,
  });
  const gateway = await connectGateway(broker);
  try {
    let received = 0;
    const all = new Promise<number>((resolve) => subscriber.on('message', () => ++received === messages && resolve(Date.now())));
    await subscriber.subscribeAsync('$share/alone/telemetry/+/+', { qos: 1 });
    const started = Date.now();
    await publishMany(gateway, messages, publication);
    const published = Date.now();
    const finished = await all;
    return {
      system: 'publisher-alone',
      messages,
      seconds: round((finished - started) / 1000, 2),
      perSecond: round(messages / ((finished - started) / 1000), 1),
      acceptedPerSecond: round(messages / ((published - started) / 1000), 1),
    };
  } finally {
    await Promise.all([subscriber.endAsync(true), gateway.endAsync(true)]);
  }
}

/** What a bridge run measures: from `started` until the bridge acknowledged every message, and until the sink had them all. */
interface BridgeRun {
  started: number;
  acknowledged: Promise<number>;
}

/**
 * Live: the bridge subscribed, then the messages published as above (the publisher sets the pace).
 * Backlog: the messages published while the bridge is away (its session keeps them), then the bridge started:
 * from its connect until every message is acknowledged, its own pace, as after an outage.
 */
async function throughBridge(
  bench: BenchServer,
  sink: FlakyEndpoint,
  broker: Mosquitto,
  messages: number,
  mode: 'live' | 'backlog',
): Promise<BridgeRow> {
  const taskQueue = `bridge-${randomUUID().slice(0, 6)}`;
  const pathname = `/bridge/${taskQueue}`;
  const worker = await startWorkerProcess('redeliver', bench.server.address, taskQueue);
  const setup: BridgeSetup = {
    config: {
      broker: { url: broker.url, credential: 'bridge', clientId: `bench-${taskQueue}` },
      group: taskQueue,
      topics: ['telemetry/+/+'],
      target: `${sink.url}${pathname}`,
    },
    credential: bridgeCredential(broker),
  };
  const startBridge = () => forkWorkerProcess('bridge-process.js', [bench.server.address, taskQueue, JSON.stringify(setup)]);
  const gateway = await connectGateway(broker);
  let bridge: WorkerProcess | undefined;
  try {
    const delivered = waitForDelivered(sink, pathname, messages, 60_000 + messages * 20);
    delivered.catch(() => undefined);
    if (mode === 'backlog') {
      // its session and subscription made, then left (a clean stop keeps both): the broker queues what comes
      await (await startBridge()).stop();
      await publishMany(gateway, messages, publication);
    }
    bridge = await startBridge();
    const before = { bridge: await bridge.stats(), worker: await worker.stats() };
    const run =
      mode === 'live'
        ? await live(bridge, gateway, messages)
        : { started: await ask<number>(bridge, 'connected-at'), acknowledged: ask<number>(bridge, { acknowledged: messages }) };
    const [acceptedAt, lastArrival] = await Promise.all([run.acknowledged, delivered]);
    const after = { bridge: await bridge.stats(), worker: await worker.stats() };
    const perMessage = (ms: number) => round(ms / messages, 3);
    return {
      system: mode === 'live' ? 'bridge' : 'bridge-backlog',
      messages,
      seconds: round((lastArrival - run.started) / 1000, 2),
      perSecond: round(messages / ((lastArrival - run.started) / 1000), 1),
      acceptedPerSecond: round(messages / ((acceptedAt - run.started) / 1000), 1),
      bridgeCpuMsPerMessage: perMessage(after.bridge.cpuMs - before.bridge.cpuMs),
      workerCpuMsPerMessage: perMessage(after.worker.cpuMs - before.worker.cpuMs),
      batches: (await bench.client.workflow.count(`WorkflowType = 'batchWorkflow' AND TaskQueue = '${taskQueue}'`)).count,
    };
  } finally {
    await gateway.endAsync(true);
    await bridge?.stop();
    await worker.stop();
  }
}

async function live(bridge: WorkerProcess, gateway: MqttClient, messages: number): Promise<BridgeRun> {
  const acknowledged = ask<number>(bridge, { acknowledged: messages });
  const started = Date.now();
  await publishMany(gateway, messages, publication);
  return { started, acknowledged };
}

/** One question to the bridge's process and its answer's `at` (one question at a time: answers carry no name). */
function ask<T>(bridge: WorkerProcess, question: unknown): Promise<T> {
  return new Promise((resolve) => {
    bridge.child.once('message', (m) => resolve((m as { at: T }).at));
    bridge.child.send(question as string);
  });
}
