import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { classify } from '../../../src/classify';
import { createMqttPool, type MqttPool, type MqttPublish } from '../../../src/transports/mqtt';
import { credentialsFromEnvironment, type MqttBrokerBinding, type MqttCredential } from '../../../src/transports/mqtt-credentials';
import { startMosquitto, watch, type Mosquitto } from '../../support/mosquitto';
import { startTcpListener, type TcpListener } from '../../support/tcp-listener';
import { waitFor } from '../../support/wait';

const TLS_DIR = path.join(__dirname, '../../fixtures/tls');
const CA = readFileSync(path.join(TLS_DIR, 'localhost.crt'), 'utf8');
/** What a producer after the credential brings: a CA of its own, and a certificate it signed for attacker.test. */
const ATTACKER = {
  ca: readFileSync(path.join(TLS_DIR, 'attacker-ca.crt'), 'utf8'),
  cert: readFileSync(path.join(TLS_DIR, 'attacker.crt'), 'utf8'),
  key: readFileSync(path.join(TLS_DIR, 'attacker.key'), 'utf8'),
};
const USERS = {
  pub: { username: 'pub', password: 'pub-secret', acl: ['write telemetry/#', 'write event/#'] },
  other: { username: 'other', password: 'other-secret', acl: ['write telemetry/#'] },
  observer: { username: 'observer', password: 'observer-secret', acl: ['readwrite #'] },
};
/** The worker's credentials, each bound to the test broker (both its listeners), as every credential must be. */
const credential = (name: string): MqttCredential | undefined => {
  const brokers = [broker.url, broker.tlsUrl!];
  const logins: Record<string, { username: string; password: string }> = {
    pub: USERS.pub,
    other: USERS.other,
    wrong: { username: 'pub', password: 'not-the-password' },
  };
  const login = logins[name];
  return login && { username: login.username, password: login.password, brokers, tenants: ['acme'] };
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
    tenant: 'acme',
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
    await waitFor(
      async () => watcher.seen.length,
      (n) => n === 1,
      5_000,
      'the watcher to get the message',
    );
    expect(watcher.seen[0]).toMatchObject({
      payload: '{"t":1}',
      qos: 1,
      contentType: 'application/json',
      userProperties: { 'message-id': 'm-1', 'delivery-attempt': '3' },
    });
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
  await waitFor(
    async () => p.stats().connections,
    (n) => n === 0,
    6_000,
    'the keep-alive to drop the connection',
  );
});

test('a broker that dies fails the attempts waiting on it; nothing reconnects until the next attempt', async () => {
  const p = pool();
  await publish(p);
  broker.freeze(); // the next PUBLISH is written but never answered
  const waiting = publish(p, { timeoutMs: 10_000 });
  await waitFor(
    async () => p.stats().inFlight,
    (n) => n === 1,
    5_000,
    'the attempt to be in flight',
  );
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
  expect(classify((await publish(p, { topic: 'command/acme/x/req/1/off' })).outcome)).toMatchObject({
    class: 'client',
    code: 'mqtt-0x87',
    retryable: false,
  });
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
  const p = createMqttPool({
    credentials: credentialsFromEnvironment({
      REDELIVER_MQTT_CREDENTIALS_BROKEN: 'user:hunter2',
      REDELIVER_MQTT_CREDENTIALS_UNBOUND: unbound,
    }),
    allow: ['loopback'],
  });
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
  // refused before a connection was even tried
  expect(p.stats().connects).toBe(0);
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
    const subscription = await p.connectDedicated(
      { url: attacker.url('mqtts'), protocolVersion: '3.1.1', credential: 'pub', tenant: 'acme', tls: null },
      { clientId: 'sub-1', clean: true, timeoutMs: 2_000 },
    );
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
    const tlsOnly = (name: string): MqttCredential | undefined =>
      name === 'pub'
        ? { ...USERS.pub, tenants: ['acme'], brokers: [{ url: broker.tlsUrl!.replace('localhost', 'LOCALHOST'), ca: CA }] }
        : undefined;
    const p = pool({ credentials: tlsOnly });
    const plain = `mqtt://localhost:${new URL(broker.tlsUrl!).port}`;
    expect(classify((await publish(p, { url: plain })).outcome).code).toBe('secret-not-bound');
    expect(classify((await publish(p, { url: broker.url })).outcome).code).toBe('secret-not-bound');
    // the host compares case-insensitively: LOCALHOST in the binding is localhost
    expect(classify((await publish(p, { url: broker.tlsUrl! })).outcome).class).toBe('success');
  });

  test('from the file and the environment alike, read at connect time: a rotated password and binding apply to the next connection', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-credentials-')), 'credentials.json');
    const write = (password: string, brokers: string[]) =>
      writeFileSync(file, JSON.stringify({ filed: { username: 'pub', password, brokers, tenants: ['acme'] } }));
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

test("mqtts: the broker certificate is verified; a CA in the credential's binding lets it through", async () => {
  const p = pool();
  const untrusted = classify((await publish(p, { url: broker.tlsUrl! })).outcome);
  expect(untrusted).toMatchObject({ class: 'connection', code: 'tls-DEPTH_ZERO_SELF_SIGNED_CERT' });
  const caFile = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-ca-')), 'ca.pem');
  writeFileSync(caFile, CA);
  const bindings: Record<string, MqttBrokerBinding> = { inline: { url: broker.tlsUrl!, ca: CA }, filed: { url: broker.tlsUrl!, caFile } };
  const trusting = pool({ credentials: (name) => bindings[name] && { ...USERS.pub, tenants: ['acme'], brokers: [bindings[name]] } });
  for (const credential of ['inline', 'filed'])
    expect({ credential, ...classify((await publish(trusting, { url: broker.tlsUrl!, credential })).outcome) }).toMatchObject({
      credential,
      class: 'success',
    });
  // without a credential nothing of the worker's is at stake: a delivery may trust a CA of its own (and this broker then wants a login)
  expect(classify((await publish(p, { url: broker.tlsUrl!, credential: null, tls: { ca: CA } })).outcome).code).toMatch(/^mqtt-0x8[67]$/);
});

describe("the TLS trust of a credential is its binding's, never the delivery's", () => {
  let impostor: TcpListener;
  /** The broker a credential is bound to, as the worker names it: reached, here, on the impostor's port. */
  let bound: string;
  beforeEach(async () => {
    impostor = (await startTcpListener('127.0.0.1', { tls: { key: ATTACKER.key, cert: ATTACKER.cert } }))!;
    bound = `mqtts://localhost:${impostor.port}`;
  });
  afterEach(async () => {
    await impostor.close();
  });

  test("a delivery that brings its own CA or server name with a credential is refused before any connection: the impostor's listener sees none", async () => {
    // whoever answers for the bound name (DNS, the network path) shows a certificate for attacker.test, signed by the producer's CA
    const p = pool({ credentials: (name) => (name === 'pub' ? { ...USERS.pub, tenants: ['acme'], brokers: [bound] } : undefined) });
    const tries = [{ ca: ATTACKER.ca, servername: 'attacker.test' }, { ca: ATTACKER.ca }, { servername: 'attacker.test' }];
    const outcomes = [];
    for (const tls of tries) outcomes.push(classify((await publish(p, { url: bound, tls, timeoutMs: 1_000 })).outcome));
    expect(Buffer.concat(impostor.received).toString('latin1')).not.toContain(USERS.pub.password);
    expect(await impostor.settled()).toBe(0);
    for (const c of outcomes) {
      expect(c).toMatchObject({ class: 'client', retryable: false, code: 'invalid-target' });
      expect(c.reason).toContain('tls.ca or tls.servername');
    }
    // a subscription's dedicated connection passes the same gate
    const held = await p.connectDedicated(
      { url: bound, protocolVersion: '5', credential: 'pub', tenant: 'acme', tls: tries[0]! },
      { clientId: 'sub-1', clean: true, timeoutMs: 1_000 },
    );
    expect(held.ok ? 'connected' : classify(held.outcome).code).toBe('invalid-target');
    expect(await impostor.settled()).toBe(0);
  });

  test("the binding's own CA and server name are the operator's to choose: with them, the credential goes there", async () => {
    const p = pool({
      credentials: (name) =>
        name === 'pub'
          ? { ...USERS.pub, tenants: ['acme'], brokers: [{ url: bound, ca: ATTACKER.ca, servername: 'attacker.test' }] }
          : undefined,
    });
    await publish(p, { url: bound, timeoutMs: 500 });
    expect(await impostor.settled()).toBe(1);
    expect(Buffer.concat(impostor.received).toString('latin1')).toContain(USERS.pub.password);
  });
});

test("a credential serves only its tenants: another tenant's attempt is refused before any connection, and leaves the tenant's pooled connection alone", async () => {
  const p = pool();
  expect(classify((await publish(p)).outcome).class).toBe('success');
  expect(p.stats()).toMatchObject({ connections: 1, connects: 1 });
  const refused = classify((await publish(p, { tenant: 'globex', topic: 'command/acme/valve-7/res' })).outcome);
  expect(refused).toMatchObject({ class: 'client', retryable: false, code: 'secret-not-for-tenant' });
  expect(refused.reason).toBe(
    'the worker\'s MQTT credential "pub" is not for tenant globex: a secret serves only the tenants its configuration lists, so nothing was sent. ' +
      'If tenant "globex" may use it, add it to "tenants" in REDELIVER_MQTT_CREDENTIALS_PUB or the file named by REDELIVER_MQTT_CREDENTIALS_FILE',
  );
  // acme's connection was neither used nor retired for it
  expect(classify((await publish(p)).outcome).class).toBe('success');
  expect(p.stats()).toMatchObject({ connections: 1, connects: 1 });
  // a subscription's dedicated connection passes the same gate
  const held = await p.connectDedicated(
    { url: broker.url, protocolVersion: '5', credential: 'pub', tenant: 'globex', tls: null },
    { clientId: 'sub-globex', clean: true, timeoutMs: 2_000 },
  );
  expect(held.ok ? 'connected' : classify(held.outcome).code).toBe('secret-not-for-tenant');
  // "*" serves every tenant
  const shared = pool({ credentials: (name) => (name === 'pub' ? { ...USERS.pub, tenants: ['*'], brokers: [broker.url] } : undefined) });
  expect(classify((await publish(shared, { tenant: 'globex' })).outcome).class).toBe('success');
});

test('a pooled connection is used no longer once its binding is revoked or its password changes', async () => {
  let login = { ...USERS.pub, tenants: ['acme'], brokers: [broker.url] };
  const p = pool({ credentials: (name) => (name === 'pub' ? login : undefined) });
  expect(classify((await publish(p)).outcome).class).toBe('success');
  expect(p.stats()).toMatchObject({ connections: 1, connects: 1 });
  // the operator takes the broker out of the binding: the open connection, logged in, must not carry on
  login = { ...login, brokers: [broker.tlsUrl!] };
  expect(classify((await publish(p)).outcome)).toMatchObject({ class: 'client', code: 'secret-not-bound' });
  expect(p.stats()).toMatchObject({ connections: 0, connects: 1 });
  login = { ...login, brokers: [broker.url] };
  expect(classify((await publish(p)).outcome).class).toBe('success');
  expect(p.stats()).toMatchObject({ connections: 1, connects: 2 });
  // a changed password logs in anew (here one the broker refuses: the old login was not reused)
  login = { ...login, password: 'rotated' };
  expect(classify((await publish(p)).outcome).code).toMatch(/^mqtt-0x8[67]$/);
  expect(p.stats()).toMatchObject({ connections: 0, connects: 3 });
});

test('the SSRF guard: a broker on loopback is refused unless the worker allows it', async () => {
  const p = pool({ allow: [] });
  const refused = classify((await publish(p)).outcome);
  expect(refused).toMatchObject({ class: 'client', code: 'ssrf-blocked' });
  expect(p.stats().connections).toBe(0);
});
