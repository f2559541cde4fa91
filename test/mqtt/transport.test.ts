import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { classify } from '../../src/classify';
import { createMqttPool, type MqttPool, type MqttPublish } from '../../src/transports/mqtt';
import { credentialsFromEnvironment, type MqttCredential } from '../../src/transports/mqtt-credentials';
import { startMosquitto, watch, type Mosquitto } from '../support/mosquitto';
import { startTcpListener, type TcpListener } from '../support/tcp-listener';
import { waitFor } from '../support/wait';

const CA = readFileSync(path.join(__dirname, '../fixtures/tls/localhost.crt'), 'utf8');
const USERS = {
  pub: { username: 'pub', password: 'pub-secret', acl: ['write telemetry/#', 'write event/#'] },
  other: { username: 'other', password: 'other-secret', acl: ['write telemetry/#'] },
  observer: { username: 'observer', password: 'observer-secret', acl: ['readwrite #'] },
};
/** The worker's credentials, each bound to the test broker (both its listeners), as every credential must be. */
const credential = (name: string): MqttCredential | undefined => {
  const brokers = [broker.url, broker.tlsUrl!];
  const logins: Record<string, { username: string; password: string }> = { pub: USERS.pub, other: USERS.other, wrong: { username: 'pub', password: 'not-the-password' } };
  const login = logins[name];
  return login && { username: login.username, password: login.password, brokers };
};

let broker: Mosquitto;
const pools: MqttPool[] = [];
/** A pool as a worker has it (loopback allowed, for the local broker), closed after the test. */
const pool = (options: Parameters<typeof createMqttPool>[0] = {}) => {
  const p = createMqttPool({ credentials: credential, allow: ['loopback'], ...options });
  pools.push(p);
  return p;
};
const publish = (p: MqttPool, overrides: Partial<MqttPublish> = {}): ReturnType<MqttPool['publish']> =>
  p.publish({
    url: broker.url,
    protocolVersion: '5',
    credential: 'pub',
    tls: null,
    topic: `telemetry/acme/${randomUUID().slice(0, 8)}`,
    payload: '{"t":1}',
    qos: 1,
    timeoutMs: 5_000,
    ...overrides,
  });

beforeAll(async () => {
  broker = await startMosquitto({ users: Object.values(USERS), tls: true });
});
afterEach(async () => {
  if (!broker.running()) await broker.start();
  broker.thaw();
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
afterAll(async () => {
  await broker?.stop();
});

test('QoS 1: success is the PUBACK; the message id and attempt travel as MQTT 5 user properties', async () => {
  const watcher = await watch(broker.url, USERS.observer, 'telemetry/acme/props');
  try {
    const { outcome } = await publish(pool(), {
      topic: 'telemetry/acme/props',
      userProperties: { 'message-id': 'm-1', 'delivery-attempt': '3' },
      contentType: 'application/json',
    });
    expect(classify(outcome)).toMatchObject({ class: 'success', code: 'mqtt-0x00' });
    await waitFor(async () => watcher.seen.length, (n) => n === 1, 5_000, 'the watcher to get the message');
    expect(watcher.seen[0]).toMatchObject({ payload: '{"t":1}', qos: 1, contentType: 'application/json', userProperties: { 'message-id': 'm-1', 'delivery-attempt': '3' } });
  } finally {
    await watcher.close();
  }
});

test('MQTT 5 PUBACK 0x10 (no subscribers) is a success of its own; QoS 0 is sent without acknowledgement', async () => {
  const p = pool();
  expect(classify((await publish(p)).outcome)).toMatchObject({ class: 'success', code: 'mqtt-0x10' });
  expect(classify((await publish(p, { qos: 0 })).outcome)).toMatchObject({ class: 'success', code: 'mqtt-sent' });
});

test('one connection per broker and credential, reused across attempts; concurrent attempts share one connect', async () => {
  const p = pool();
  const results = await Promise.all(Array.from({ length: 8 }, () => publish(p)));
  expect(results.map((r) => classify(r.outcome).class)).toEqual(Array(8).fill('success'));
  expect(p.stats()).toMatchObject({ connects: 1, connections: 1, inFlight: 0 });
  await publish(p);
  expect(p.stats()).toMatchObject({ connects: 1, connections: 1 });
  // another credential (or MQTT version) is another connection
  await publish(p, { credential: 'other' });
  await publish(p, { protocolVersion: '3.1.1' });
  expect(p.stats()).toMatchObject({ connects: 3, connections: 3 });
});

test('no PUBACK within the attempt timeout: mqtt-no-puback, retried as a lost connection', async () => {
  const p = pool();
  await publish(p); // connected
  broker.freeze();
  const { outcome, durationMs } = await publish(p, { timeoutMs: 400 });
  broker.thaw();
  expect(outcome).toEqual({ kind: 'mqtt-no-puback', afterMs: 400 });
  expect(classify(outcome)).toMatchObject({ class: 'connection', retryable: true });
  expect(durationMs).toBeGreaterThanOrEqual(390);
});

test('keep-alive finds a hung broker: the connection leaves the pool', async () => {
  const p = pool({ keepaliveSeconds: 1 });
  await publish(p);
  expect(p.stats().connections).toBe(1);
  broker.freeze();
  // mqtt.js gives up 1.5 keep-alive periods after the last packet it heard
  await waitFor(async () => p.stats().connections, (n) => n === 0, 6_000, 'the keep-alive to drop the connection');
});

test('a broker that dies fails the attempts waiting on it; nothing reconnects until the next attempt', async () => {
  const p = pool();
  await publish(p);
  broker.freeze(); // the next PUBLISH is written but never answered
  const waiting = publish(p, { timeoutMs: 10_000 });
  await waitFor(async () => p.stats().inFlight, (n) => n === 1, 5_000, 'the attempt to be in flight');
  await broker.kill();
  const { outcome } = await waiting;
  expect(classify(outcome)).toMatchObject({ class: 'connection', code: expect.stringMatching(/^(mqtt-closed|net-ECONNRESET)$/) });
  expect(p.stats()).toMatchObject({ connections: 0, connects: 1 });

  // while the broker is down, an attempt fails at once: refused, not queued
  expect(classify((await publish(p)).outcome)).toMatchObject({ class: 'connection', code: 'net-ECONNREFUSED' });
  await broker.start();
  const watcher = await watch(broker.url, USERS.observer); // the broker is back
  await watcher.close();
  expect(p.stats()).toMatchObject({ connections: 0, connects: 2 });
  expect(classify((await publish(p)).outcome).class).toBe('success');
  expect(p.stats()).toMatchObject({ connections: 1, connects: 3 });
});

test('not authorized to publish (MQTT 5 PUBACK 0x87): a client error; MQTT 3.1.1 cannot tell', async () => {
  const p = pool();
  expect(classify((await publish(p, { topic: 'command/acme/x/req/1/off' })).outcome)).toMatchObject({ class: 'client', code: 'mqtt-0x87', retryable: false });
  // MQTT 3.1.1 has no way to refuse a single message: Mosquitto acknowledges and drops it
  expect(classify((await publish(p, { topic: 'command/acme/x/req/1/off', protocolVersion: '3.1.1' })).outcome).class).toBe('success');
});

test('a wrong password: refused at CONNACK (MQTT 5: a client error; MQTT 3.1.1: 0x05, waited out unless overridden)', async () => {
  const p = pool();
  const v5 = classify((await publish(p, { credential: 'wrong' })).outcome);
  expect(v5).toMatchObject({ class: 'client', code: expect.stringMatching(/^mqtt-0x8[67]$/) });
  const v3 = (await publish(p, { credential: 'wrong', protocolVersion: '3.1.1' })).outcome;
  expect(v3).toEqual({ kind: 'mqtt3-connack', returnCode: 5 });
  expect(classify(v3).class).toBe('well-known');
  expect(classify(v3, { 'mqtt3-connack-0x05': 'client' }).class).toBe('client');
  expect(p.stats().connections).toBe(0);
});

test('a credential the worker does not have, or has without brokers: rejected, naming where the worker looks; the secret never in the reason', async () => {
  const unbound = JSON.stringify({ username: 'pub', password: 'hunter2' });
  const p = createMqttPool({ credentials: credentialsFromEnvironment({ REDELIVER_MQTT_CREDENTIALS_BROKEN: 'user:hunter2', REDELIVER_MQTT_CREDENTIALS_UNBOUND: unbound }), allow: ['loopback'] });
  pools.push(p);
  const missing = classify((await publish(p, { credential: 'nope' })).outcome);
  expect(missing).toMatchObject({ class: 'client', code: 'invalid-target' });
  expect(missing.reason).toContain('REDELIVER_MQTT_CREDENTIALS_NOPE');
  const broken = classify((await publish(p, { credential: 'broken' })).outcome);
  expect(broken.reason).toContain('REDELIVER_MQTT_CREDENTIALS_BROKEN: must be JSON');
  const withoutBrokers = classify((await publish(p, { credential: 'unbound' })).outcome);
  expect(withoutBrokers).toMatchObject({ class: 'client', code: 'invalid-target' });
  expect(withoutBrokers.reason).toContain('REDELIVER_MQTT_CREDENTIALS_UNBOUND: "brokers" is required');
  for (const c of [broken, withoutBrokers]) expect(c.reason).not.toContain('hunter2');
  expect(p.stats().connects).toBe(3);
  expect(p.stats().connections).toBe(0);
});

describe('a credential goes only to the brokers it is bound to', () => {
  let attacker: TcpListener;
  beforeEach(async () => {
    attacker = (await startTcpListener('127.0.0.1'))!;
  });
  afterEach(async () => {
    await attacker.close();
  });

  test("a delivery naming it with a broker of its own is refused before any connection: the attacker's listener sees none", async () => {
    const p = pool();
    const refused = classify((await publish(p, { url: attacker.url('mqtt') })).outcome);
    expect(refused).toMatchObject({ class: 'client', retryable: false, code: 'secret-not-bound' });
    expect(refused.reason).toBe(
      `the worker's MQTT credential "pub" is not bound to ${attacker.url('mqtt')}: a secret goes only to the targets its configuration lists, so nothing was sent. ` +
        'If it is trusted, add it to "brokers" in REDELIVER_MQTT_CREDENTIALS_PUB or the file named by REDELIVER_MQTT_CREDENTIALS_FILE',
    );
    // a command subscription's dedicated connection passes the same gate
    const subscription = await p.connectDedicated({ url: attacker.url('mqtts'), protocolVersion: '3.1.1', credential: 'pub', tls: null }, { clientId: 'sub-1', clean: true, timeoutMs: 2_000 });
    expect(subscription.ok ? 'connected' : classify(subscription.outcome).code).toBe('secret-not-bound');
    expect(await attacker.settled()).toBe(0);
    expect(attacker.received).toEqual([]);
    // the broker it is bound to still gets it
    expect(classify((await publish(p)).outcome).class).toBe('success');
    // without a credential, nothing secret is at stake: the attacker's broker is just a broker
    await publish(p, { url: attacker.url('mqtt'), credential: null, timeoutMs: 300 });
    expect(await attacker.settled()).toBe(1);
  });

  test('the binding is by scheme, host and port: a credential bound to the TLS listener is not sent in clear to the same host', async () => {
    const tlsOnly = (name: string): MqttCredential | undefined => (name === 'pub' ? { ...USERS.pub, brokers: [broker.tlsUrl!.replace('localhost', 'LOCALHOST')] } : undefined);
    const p = pool({ credentials: tlsOnly });
    const plain = `mqtt://localhost:${new URL(broker.tlsUrl!).port}`;
    expect(classify((await publish(p, { url: plain })).outcome).code).toBe('secret-not-bound');
    expect(classify((await publish(p, { url: broker.url })).outcome).code).toBe('secret-not-bound');
    // the host compares case-insensitively: LOCALHOST in the binding is localhost
    expect(classify((await publish(p, { url: broker.tlsUrl!, tls: { ca: CA } })).outcome).class).toBe('success');
  });

  test('from the file and the environment alike, read at connect time: a rotated password and binding apply to the next connection', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-credentials-')), 'credentials.json');
    const write = (password: string, brokers: string[]) => writeFileSync(file, JSON.stringify({ filed: { username: 'pub', password, brokers } }));
    write('old-password', [broker.url]);
    const p = pool({ credentials: credentialsFromEnvironment({ REDELIVER_MQTT_CREDENTIALS_FILE: file }) });
    expect(classify((await publish(p, { credential: 'filed' })).outcome).code).toMatch(/^mqtt-0x8[67]$/);
    write(USERS.pub.password, [broker.url]);
    expect(classify((await publish(p, { credential: 'filed' })).outcome).class).toBe('success');
    expect(classify((await publish(p, { credential: 'filed', url: attacker.url('mqtt') })).outcome).code).toBe('secret-not-bound');
    write(USERS.pub.password, [broker.url, attacker.url('mqtt')]);
    await publish(p, { credential: 'filed', url: attacker.url('mqtt'), timeoutMs: 300 });
    expect(await attacker.settled()).toBe(1);
  });
});

test('mqtts: the broker certificate is verified; a trusted CA lets it through', async () => {
  const p = pool();
  const untrusted = classify((await publish(p, { url: broker.tlsUrl! })).outcome);
  expect(untrusted).toMatchObject({ class: 'connection', code: 'tls-DEPTH_ZERO_SELF_SIGNED_CERT' });
  expect(classify((await publish(p, { url: broker.tlsUrl!, tls: { ca: CA } })).outcome).class).toBe('success');
});

test('the SSRF guard: a broker on loopback is refused unless the worker allows it', async () => {
  const p = pool({ allow: [] });
  const refused = classify((await publish(p)).outcome);
  expect(refused).toMatchObject({ class: 'client', code: 'ssrf-blocked' });
  expect(p.stats().connections).toBe(0);
});
