import { randomUUID } from 'node:crypto';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { startMosquitto, watch, type Mosquitto, type Watcher } from '../../support/mosquitto';
import { freePort } from '../../support/ports';
import { runCli } from '../../support/cli';
import { acmeHubPerTest } from '../../support/acme-hub';
import { startTcpListener } from '../../support/tcp-listener';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const USERS = {
  device: { username: 'gateway', password: 'gateway-secret', acl: ['write telemetry/#', 'write event/#', 'write command///res/#'] },
  observer: { username: 'observer', password: 'observer-secret', acl: ['readwrite #'] },
};

let broker: Mosquitto;
let h: Harness;
const watchers: Watcher[] = [];

beforeAll(async () => {
  [broker, h] = await Promise.all([startMosquitto({ users: Object.values(USERS) }), startHarness()]);
  // the worker resolves credentials by name from its environment, each bound to its brokers: the delivery carries only the name
  const brokers = [broker.url];
  process.env.REDELIVER_MQTT_CREDENTIALS_GATEWAY = JSON.stringify({
    username: USERS.device.username,
    password: USERS.device.password,
    brokers,
    tenants: ['acme'],
  });
  process.env.REDELIVER_MQTT_CREDENTIALS_WRONG = JSON.stringify({
    username: USERS.device.username,
    password: 'not-the-password',
    brokers,
    tenants: ['acme'],
  });
});
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.close()));
  broker.thaw();
  if (!broker.running()) await broker.start();
});
afterAll(async () => {
  await h?.stop();
  await broker?.stop();
});

const device = () => `sensor-${randomUUID().slice(0, 8)}`;
const observe = async (filter: string) => {
  const w = await watch(broker.url, USERS.observer, filter);
  watchers.push(w);
  return w;
};
const submit = (input: Partial<DeliveryInput> & Pick<DeliveryInput, 'kind'>) =>
  h.redeliver.submit({
    tenant: 'acme',
    device: device(),
    messageId: randomUUID(),
    payload: { t: 21.5 },
    target: { url: broker.url, credential: 'gateway' },
    ...input,
  } as DeliveryInput);
test("QoS 1 event: delivered on the broker's PUBACK, on Hono's topic, the message id as an MQTT 5 user property", async () => {
  const dev = device();
  const watcher = await observe(`event/acme/${dev}`);
  const handle = await submit({ kind: 'event', device: dev });
  const result = await handle.result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 1 });
  const status = await handle.status();
  expect(status.endpoint).toBe(`127.0.0.1:${broker.port}`);
  await waitFor(
    async () => watcher.seen.length,
    (n) => n >= 1,
    5_000,
    'the message at the receiver',
  );
  expect(watcher.seen).toEqual([
    {
      topic: `event/acme/${dev}`,
      payload: '{"t":21.5}',
      qos: 1,
      contentType: 'application/json',
      userProperties: { 'message-id': result.messageId, 'delivery-attempt': '1' },
    },
  ]);
  // the worker's history holds the credential's name, never the secret
  expect(JSON.stringify(await handle.workflow.fetchHistory())).not.toContain(USERS.device.password);
});

test('QoS 1 telemetry over MQTT 3.1.1: delivered on the PUBACK (3.1.1 carries no user properties)', async () => {
  const dev = device();
  const watcher = await observe(`telemetry/acme/${dev}`);
  const result = await (
    await submit({ kind: 'telemetry', device: dev, target: { url: broker.url, credential: 'gateway', protocolVersion: '3.1.1' } })
  ).result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 1 });
  await waitFor(
    async () => watcher.seen.length,
    (n) => n >= 1,
    5_000,
    'the message at the receiver',
  );
  expect(watcher.seen[0]).toMatchObject({ topic: `telemetry/acme/${dev}`, qos: 1, userProperties: {} });
});

test('QoS 0 telemetry: sent exactly once; with the broker away, dropped after its one attempt', async () => {
  const dev = device();
  const watcher = await observe(`telemetry/acme/${dev}`);
  const handle = await submit({ kind: 'telemetry', qos: 0, device: dev, payload: 'qos0' });
  expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect((await handle.status()).lastAttemptAt).not.toBeNull();
  // a QoS 1 message after it on the same connection: once the receiver has that, it has all the QoS 0 there is
  await (await submit({ kind: 'telemetry', device: dev, payload: 'after' })).result();
  await waitFor(
    async () => watcher.seen.map((m) => m.payload),
    (p) => p.includes('after'),
    5_000,
    'the QoS 1 message behind it',
  );
  expect(watcher.seen.filter((m) => m.payload === 'qos0')).toEqual([expect.objectContaining({ qos: 0 })]);

  const nowhere = `mqtt://127.0.0.1:${await freePort()}`;
  const dropped = await (await submit({ kind: 'telemetry', qos: 0, target: { url: nowhere } })).result();
  expect(dropped).toMatchObject({ outcome: 'dropped', attempts: 1, lastError: { class: 'connection', code: 'net-ECONNREFUSED' } });
});

test("broker down, then up: delivered after reconnecting, each attempt after the policy's wait", async () => {
  await broker.stop();
  const policy = { jitter: 'none', initial: '200ms', min: '200ms', multiplier: 2, max: '800ms' } as const;
  const handle = await submit({ kind: 'event', policy });
  // the attempt log while the broker is away: each attempt after the policy's wait, no tight loop
  const refused = await waitFor(
    () => handle.status(),
    (s) => s.attempts >= 4,
    20_000,
    'four refused attempts',
  );
  await broker.start();
  const result = await handle.result();
  expect(result.outcome).toBe('delivered');
  expect(result.lastError).toMatchObject({ class: 'connection', code: 'net-ECONNREFUSED' });

  const log = refused.attemptLog.map((a) => ({ ...a, at: Date.parse(a.startedAt) }));
  expect(log.map((a) => a.code)).toEqual(Array(log.length).fill('net-ECONNREFUSED'));
  const waits = [200, 400, 800, 800, 800, 800, 800, 800, 800, 800];
  for (let i = 1; i < log.length; i++) {
    const gap = log[i]!.at - (log[i - 1]!.at + log[i - 1]!.durationMs);
    expect(gap).toBeGreaterThanOrEqual(waits[i - 1]! - 5);
    // Temporal's timers fire within about a second of their time; a full-suite run on the loaded 2-core machine
    // (load average ~9) saw one 2 s late
    expect(gap).toBeLessThan(waits[i - 1]! + 3_000);
  }
});

test('a wrong password: refused at CONNACK, rejected after one attempt', async () => {
  const result = await (await submit({ kind: 'event', target: { url: broker.url, credential: 'wrong' } })).result();
  expect(result).toMatchObject({
    outcome: 'rejected',
    attempts: 1,
    lastError: { class: 'client', code: expect.stringMatching(/^mqtt-0x8[67]$/) },
  });
  expect(result.reason).toMatch(/CONNACK/);
});

test('a credential named with a broker it is not bound to: rejected after one attempt, and that broker sees no connection', async () => {
  const attacker = (await startTcpListener('127.0.0.1'))!;
  try {
    const result = await (await submit({ kind: 'event', target: { url: attacker.url('mqtt'), credential: 'gateway' } })).result();
    expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'secret-not-bound' } });
    expect(result.reason).toContain(`MQTT credential "gateway" is not bound to ${attacker.url('mqtt')}`);
    expect(await attacker.settled()).toBe(0);
    expect(attacker.received).toEqual([]);
  } finally {
    await attacker.close();
  }
});

describe("a globex delivery naming acme's credential", () => {
  const hub = acmeHubPerTest();
  const foreign = (redeliver: Redeliver) =>
    redeliver.submit({
      kind: 'command-response',
      tenant: 'globex',
      device: 'valve-7',
      messageId: randomUUID(),
      target: { url: hub().url('mqtt'), credential: 'hub-acme', topic: 'command/acme/valve-7/res' },
      command: { requestId: 'r-1', status: 200 },
      payload: { open: true },
    });

  test('is refused by the worker before any connection: rejected, secret-not-for-tenant naming the variable; the broker sees nothing', async () => {
    // submitted where the worker's credentials cannot be seen: the worker alone decides
    const blind = new Redeliver(h.client, { taskQueue: h.taskQueue, secretTenants: () => undefined });
    const result = await (await foreign(blind)).result();
    expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'secret-not-for-tenant' } });
    expect(result.reason).toContain('MQTT credential "hub-acme" is not for tenant globex');
    expect(result.reason).toContain('add it to "tenants" in REDELIVER_MQTT_CREDENTIALS_HUB_ACME');
    expect(result.reason).not.toContain('acme-secret');
    expect(await hub().settled()).toBe(0);
    // acme's own delivery does reach its broker
    const own = { url: hub().url('mqtt'), credential: 'hub-acme', timeout: '300ms' };
    expect(await (await submit({ kind: 'event', target: own, policy: { maxAttempts: 1 } })).result()).toMatchObject({ attempts: 1 });
    expect(await hub().settled()).toBe(1);
  });

  test("is refused at submit, naming target.credential, where the submitter sees the worker's credentials: nothing starts", async () => {
    await expect(foreign(h.redeliver)).rejects.toMatchObject({ problems: [{ field: 'target.credential' }] });
    expect(await hub().settled()).toBe(0);
  });
});

test('not authorized to publish on the topic (MQTT 5 PUBACK 0x87): rejected after one attempt', async () => {
  const result = await (
    await submit({ kind: 'event', target: { url: broker.url, credential: 'gateway', topic: 'alarms/{tenant}/{device}' } })
  ).result();
  expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'mqtt-0x87' } });
  expect(result.reason).toMatch(/PUBACK 0x87 Not authorized/);
});

test('broker killed mid-delivery: delivered once it is back, with the same message id', async () => {
  // an open connection in the pool, and a broker that takes the PUBLISH but never answers it
  await (await submit({ kind: 'event' })).result();
  broker.freeze();
  const handle = await submit({ kind: 'event', policy: { jitter: 'none', initial: '300ms', min: '300ms', max: '300ms' } });
  await waitFor(
    async () => h.mqtt.stats().inFlight,
    (n) => n === 1,
    10_000,
    'the attempt waiting for its PUBACK',
  );
  await broker.kill();
  await waitFor(
    () => handle.status(),
    (s) => s.lastError?.class === 'connection',
    10_000,
    'the attempt to fail',
  );
  // hold the delivery while the receiver reconnects, so that it sees the message arrive
  await handle.pause('receiver reconnecting');
  const paused = await waitFor(
    () => handle.status(),
    (s) => s.state === 'paused',
    10_000,
    'the delivery to be paused',
  );
  // the attempt the kill broke: the connection closed under it
  expect(paused.attemptLog[0]).toMatchObject({ attempt: 1, ok: false, code: expect.stringMatching(/^(mqtt-closed|net-ECONNRESET)$/) });
  await broker.start();
  const watcher = await observe('event/acme/#');
  await handle.resume();
  const result = await handle.result();
  expect(result.outcome).toBe('delivered');
  expect(result.attempts).toBeGreaterThanOrEqual(2);
  await waitFor(
    async () => watcher.seen.length,
    (n) => n >= 1,
    5_000,
    'the message at the receiver',
  );
  expect(watcher.seen.map((m) => m.userProperties)).toEqual([
    { 'message-id': result.messageId, 'delivery-attempt': String(result.attempts) },
  ]);
});

test('from the shell: submit to a broker by credential name, on a topic of its own, and wait for the outcome', async () => {
  const dev = device();
  const watcher = await observe(`event/acme/${dev}/smoke`);
  const run = await runCli([
    'submit',
    '--kind',
    'event',
    '--tenant',
    'acme',
    '--device',
    dev,
    '--target',
    broker.url,
    '--credential',
    'gateway',
    '--protocol-version',
    '3.1.1',
    '--topic',
    'event/{tenant}/{device}/smoke',
    '--data',
    '{"smoke":true}',
    '--wait',
    '--json',
    '--address',
    testAddress(),
    '--task-queue',
    h.taskQueue,
  ]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ outcome: 'delivered', attempts: 1 });
  await waitFor(
    async () => watcher.seen.length,
    (n) => n === 1,
    5_000,
    'the message at the receiver',
  );
  expect(watcher.seen[0]).toMatchObject({ topic: `event/acme/${dev}/smoke`, payload: '{"smoke":true}' });
});
