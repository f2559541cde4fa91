/**
 * `redeliver bridge` on a real Mosquitto and the suite's dev server: Hono's topics become deliveries, ids come
 * from the user property or the packet, bridges of one group share the messages, a message is acknowledged
 * only once its delivery was accepted, and a bad configuration stops the bridge before it connects.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { MqttClient } from 'mqtt';
import { Bridge, type BridgeEvent } from '../../../src/bridge/bridge';
import { PUBACK } from '../../../src/bridge/message';
import type { BridgeConfigInput } from '../../../src/bridge/types';
import { Redeliver } from '../../../src/client/index';
import { validateBridgeConfig } from '../../../src/validation/bridge';
import { bridgeCredential, connectGateway, startBridgeBroker } from '../../support/bridge';
import { runCli } from '../../support/cli';
import type { Mosquitto } from '../../support/mosquitto';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

let h: Harness;
let receiver: Receiver;
let broker: Mosquitto;
let gateway: MqttClient;
const running: Bridge[] = [];

beforeAll(async () => {
  [h, receiver, broker] = await Promise.all([startHarness(), startReceiver(), startBridgeBroker()]);
  gateway = await connectGateway(broker);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((b) => b.stop()));
});
afterAll(async () => {
  await gateway?.endAsync(true);
  await h?.stop();
  await receiver?.close();
  await broker?.stop();
});

/** A bridge in this process, on the harness's task queue, with a group of its own unless told. */
async function startBridge(
  config: Partial<BridgeConfigInput> & Pick<BridgeConfigInput, 'target' | 'targets'>,
  options: { redeliver?: Redeliver; clientId?: string } = {},
) {
  const events: BridgeEvent[] = [];
  const valid = validateBridgeConfig({
    broker: { url: broker.url, credential: 'bridge', clientId: options.clientId ?? `bridge-${randomUUID().slice(0, 8)}` },
    group: `g-${randomUUID().slice(0, 8)}`,
    batch: { linger: '20ms' },
    ...config,
  });
  const bridge = new Bridge({
    config: valid,
    batcher: (options.redeliver ?? h.redeliver).batcher(valid.batch),
    credentials: (name) => (name === 'bridge' ? bridgeCredential(broker) : undefined),
    onEvent: (e) => events.push(e),
  });
  running.push(bridge);
  await bridge.start();
  return { bridge, events };
}

const publish = (topic: string, payload: string | Buffer, options: { qos?: 0 | 1; id?: string; contentType?: string } = {}) =>
  gateway.publishAsync(topic, payload, {
    qos: options.qos ?? 1,
    properties: {
      ...(options.id && { userProperties: { 'message-id': options.id } }),
      ...(options.contentType && { contentType: options.contentType }),
    },
  });
const accepted = (prefix: string) =>
  receiver.requests.filter((r) => r.path.startsWith(prefix) && typeof r.outcome === 'number' && r.outcome < 300);

test("Hono's topics become deliveries of their kind, tenant and device; telemetry keeps its QoS, a command response its request id and status", async () => {
  const base = `${receiver.url}/layout-${randomUUID().slice(0, 8)}`;
  const prefix = new URL(base).pathname;
  await startBridge({
    targets: {
      telemetry: `${base}/telemetry/{tenant}/{device}`,
      event: `${base}/event/{tenant}/{device}`,
      'command-response': `${base}/response/{tenant}/{device}/{requestId}/{status}`,
    },
  });
  await Promise.all([
    publish('telemetry/acme/d1', 'qos0', { qos: 0, id: 'tel-0' }),
    publish('t/acme/d2', 'qos1', { id: 'tel-1' }),
    publish('event/acme/d1', '{"alarm":1}', { id: 'evt-1', contentType: 'application/json' }),
    publish('e/beta/d3', 'short form', { id: 'evt-2' }),
    publish('command/acme/d1/res/req-7/200', '{"lumen":200}', { id: 'res-1' }),
    publish('c/acme/d1/s/req-8/503', 'busy', { id: 'res-2' }),
  ]);
  const seen = await waitFor(
    async () => accepted(prefix),
    (r) => r.length === 6,
    30_000,
    'six deliveries',
  );
  const byId = Object.fromEntries(seen.map((r) => [r.messageId, r]));
  expect(Object.fromEntries(seen.map((r) => [r.messageId, r.path.slice(prefix.length)]))).toEqual({
    'tel-0': '/telemetry/acme/d1',
    'tel-1': '/telemetry/acme/d2',
    'evt-1': '/event/acme/d1',
    'evt-2': '/event/beta/d3',
    'res-1': '/response/acme/d1/req-7/200',
    'res-2': '/response/acme/d1/req-8/503',
  });
  expect([byId['tel-0']!.headers['qos-level'], byId['tel-1']!.headers['qos-level']]).toEqual(['0', '1']);
  expect(byId['evt-1']!.headers['content-type']).toBe('application/json');
  expect(byId['evt-1']!.body).toBe('{"alarm":1}');
});

test('every message the bridge accepted is found by its id, delivered at once in the batch it came in (client and CLI)', async () => {
  const base = `${receiver.url}/found-${randomUUID().slice(0, 8)}`;
  const prefix = new URL(base).pathname;
  await startBridge({ target: `${base}/{tenant}/{device}`, topics: ['telemetry/+/+', 'event/+/+'] });
  const ids = [`tel-${randomUUID()}`, `evt-${randomUUID()}`];
  await Promise.all([publish('telemetry/acme/d9', 'one', { id: ids[0] }), publish('event/acme/d9', 'two', { id: ids[1] })]);
  await waitFor(
    async () => accepted(prefix),
    (r) => r.length === 2,
    30_000,
    'two deliveries',
  );
  for (const id of ids) {
    const deliveryId = `delivery/acme/d9/${id}`;
    // no workflow of its own: the bridge's batch delivered it at once, and its index finds it
    const status = await waitFor(
      () =>
        h.redeliver
          .getHandle(deliveryId)
          .status()
          .catch(() => null),
      (s) => s?.state === 'delivered',
      10_000,
      `the status of ${deliveryId}`,
    );
    expect(status).toMatchObject({ deliveryId, messageId: id, tenant: 'acme', device: 'd9', attempts: 1, batch: {} });
    expect(status!.batch!.workflowId).toMatch(/^batch\/acme\//);
    const cli = await runCli(['status', deliveryId, '--json', '--address', testAddress(), '--task-queue', h.taskQueue]);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ deliveryId, state: 'delivered', batch: status!.batch });
  }
});

test('the id comes from the message-id user property, else from the packet; what can never be a delivery is refused and acknowledged', async () => {
  const base = `${receiver.url}/ids-${randomUUID().slice(0, 8)}`;
  const prefix = new URL(base).pathname;
  const { bridge, events } = await startBridge({ target: `${base}/{tenant}/{device}`, topics: ['event/+/+'] });
  // in this order: the refused ones must not hold up the acknowledgement of the last
  await publish('event/acme/d1', 'a bad id', { id: 'has space' });
  await publish('event/acme/d1', Buffer.from([0xff, 0xfe, 0x00]));
  await publish('event/acme/d1', 'with an id', { id: 'evt-42' });
  await publish('event/acme/d1', 'without an id');
  const seen = await waitFor(
    async () => accepted(prefix),
    (r) => r.length === 2,
    30_000,
    'two deliveries',
  );
  expect(Object.fromEntries(seen.map((r) => [r.body, r.messageId]))).toEqual({
    'with an id': 'evt-42',
    'without an id': expect.stringMatching(/^mqtt-[A-Za-z0-9_-]{32}$/),
  });
  // a bad id is refused when the batcher validates it, a payload at once: reported in either order
  const refused = events.flatMap((e) => (e.type === 'refused' ? [e] : [])).sort((a, b) => a.reasonCode - b.reasonCode);
  expect(refused).toEqual([
    expect.objectContaining({
      topic: 'event/acme/d1',
      reasonCode: PUBACK.implementationSpecificError,
      reason: expect.stringContaining('messageId'),
    }),
    expect.objectContaining({ topic: 'event/acme/d1', reasonCode: PUBACK.payloadFormatInvalid }),
  ]);
  // all four acknowledged (PUBACKs go in order: the two refused first)
  await waitFor(
    async () => bridge.stats.acknowledged,
    (n) => n === 4,
    10_000,
    'four acknowledgements',
  );
  expect(bridge.stats).toMatchObject({ received: 4, accepted: 2, refused: 2 });
});

test("a topic's `..` levels never take a delivery outside its target's path, and the reserved tenant is refused", async () => {
  const base = `${receiver.url}/dots-${randomUUID().slice(0, 8)}`;
  const prefix = new URL(base).pathname;
  const { bridge, events } = await startBridge({ target: `${base}/ingest/{tenant}/{device}`, topics: ['telemetry/+/+', 'event/+/+'] });
  const ids = { dots: `dots-${randomUUID()}`, dot: `dot-${randomUUID()}`, reserved: `reserved-${randomUUID()}`, ok: `ok-${randomUUID()}` };
  await publish('telemetry/../..', 'up two', { id: ids.dots });
  await publish('event/acme/.', 'up none', { id: ids.dot });
  await publish('event/redeliver/d1', 'as an operational event', { id: ids.reserved });
  await publish('telemetry/acme/d1', 'in place', { id: ids.ok });
  await waitFor(
    async () => bridge.stats.acknowledged,
    (n) => n === 4,
    30_000,
    'four acknowledgements',
  );
  await waitFor(
    async () => accepted(prefix),
    (r) => r.length === 1,
    30_000,
    'the one in place delivered',
  );
  // what the receiver saw: the one in place, under its template's path; none of the others, anywhere
  expect(receiver.requests.filter((r) => Object.values(ids).includes(r.messageId!)).map((r) => [r.messageId, r.path])).toEqual([
    [ids.ok, `${prefix}/ingest/acme/d1`],
  ]);
  const refused = events.flatMap((e) => (e.type === 'refused' ? [e] : []));
  expect(refused.map((e) => [e.topic, e.reasonCode])).toEqual(
    expect.arrayContaining([
      ['telemetry/../..', PUBACK.implementationSpecificError],
      ['event/acme/.', PUBACK.implementationSpecificError],
      ['event/redeliver/d1', PUBACK.implementationSpecificError],
    ]),
  );
  expect(refused.find((e) => e.topic === 'telemetry/../..')?.reason).toMatch(/dot segment/);
  expect(refused.find((e) => e.topic === 'event/redeliver/d1')?.reason).toMatch(/tenant must not be "redeliver"/);
  expect(bridge.stats).toMatchObject({ received: 4, accepted: 1, refused: 3 });
});

test('two bridges of one group share the messages: each takes some, together all, every message delivered once', async () => {
  const base = `${receiver.url}/shared-${randomUUID().slice(0, 8)}`;
  const prefix = new URL(base).pathname;
  const config = { group: `shared-${randomUUID().slice(0, 8)}`, topics: ['event/+/+'], target: `${base}/{tenant}/{device}` };
  const [a, b] = await Promise.all([startBridge(config), startBridge(config)]);
  const ids = Array.from({ length: 200 }, (_, i) => `shared-${i}`);
  await Promise.all(ids.map((id, i) => publish(`event/acme/d${i % 5}`, id, { id })));
  const seen = await waitFor(
    async () => accepted(prefix),
    (r) => new Set(r.map((x) => x.messageId)).size === ids.length,
    60_000,
    'every message delivered',
  );
  expect(seen.map((r) => r.messageId).sort()).toEqual([...ids].sort());
  expect(a.bridge.stats.received).toBeGreaterThan(0);
  expect(b.bridge.stats.received).toBeGreaterThan(0);
  expect(a.bridge.stats.received + b.bridge.stats.received).toBe(ids.length);
});

test('a message is acknowledged only once its delivery is accepted: while Temporal refuses, the broker keeps it for the next bridge of the session', async () => {
  const base = `${receiver.url}/held-${randomUUID().slice(0, 8)}`;
  const prefix = new URL(base).pathname;
  const clientId = `held-${randomUUID().slice(0, 8)}`;
  const config = { group: `held-${randomUUID().slice(0, 8)}`, topics: ['event/+/+'], target: `${base}/{tenant}/{device}` };
  // a real Temporal that refuses every start: the namespace does not exist
  const refusing = new Redeliver(new Client({ connection: h.client.connection, namespace: `missing-${randomUUID()}` }), {
    taskQueue: h.taskQueue,
  });
  const first = await startBridge(config, { redeliver: refusing, clientId });
  const ids = ['held-1', 'held-2', 'held-3'];
  for (const id of ids) await publish('event/acme/d1', id, { id });
  await waitFor(
    async () => first.events.filter((e) => e.type === 'submit-failing').length,
    (n) => n > 0,
    30_000,
    'the starts to fail',
  );
  await first.bridge.stop();
  expect(first.bridge.stats).toMatchObject({ received: 3, accepted: 0, acknowledged: 0 });
  expect(accepted(prefix)).toEqual([]);

  // the same session, with a Temporal that accepts: the broker sends the three again
  const second = await startBridge(config, { clientId });
  const seen = await waitFor(
    async () => accepted(prefix),
    (r) => r.length === 3,
    30_000,
    'the three delivered',
  );
  expect(seen.map((r) => r.messageId).sort()).toEqual(ids);
  expect(second.events[0]).toEqual({ type: 'connected', clientId, sessionPresent: true });
  expect(second.bridge.stats).toMatchObject({ received: 3, redelivered: 3, accepted: 3 });
});

test('a bad configuration stops `redeliver bridge` before it connects (exit 2), naming each field, flag and variable', async () => {
  const run = await runCli(
    ['bridge', '--broker', 'ftp://broker.example.com', '--topic', 'event/#/x', '--target', 'https://x.example.com'],
    {
      REDELIVER_MQTT_CREDENTIALS_BRIDGE: '{"username":"bridge"}',
    },
  );
  expect(run.code).toBe(2);
  expect(run.stderr).toContain('broker.url (--broker): scheme "ftp" is not supported');
  expect(run.stderr).toContain('topics[0] (--topic): may have "#" only as the whole last level');
  const file = await runCli(['bridge', '--config', '/nonexistent/bridge.json']);
  expect(file.code).toBe(2);
  expect(file.stderr).toContain('--config: cannot read /nonexistent/bridge.json');
  const env = await runCli(['bridge', '--broker', broker.url, '--target', 'https://x.example.com', '--address', '127.0.0.1:1'], {
    REDELIVER_MQTT_CREDENTIALS_BRIDGE: '{"username":"bridge"}',
  });
  expect(env.code).toBe(2);
  expect(env.stderr).toContain('REDELIVER_MQTT_CREDENTIALS_BRIDGE: "brokers" is required');
});
