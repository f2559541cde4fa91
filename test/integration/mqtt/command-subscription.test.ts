import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter } from '@temporalio/common';
import mqtt from 'mqtt';
import { InvalidInputError } from '../../../src/errors';
import type { CommandSubscription } from '../../../src/subscription/types';
import type { SubscriptionHandle } from '../../../src/client/subscriptions';
import { Subscriptions } from '../../../src/client/subscriptions';
import { startMosquitto, watch, type Mosquitto, type Watcher } from '../../support/mosquitto';
import { runCli } from '../../support/cli';
import { acmeHubPerTest } from '../../support/acme-hub';
import { startTcpListener } from '../../support/tcp-listener';
import { subscriptionFacts, subscriptionStartOptions } from '../../../src/contract';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const USERS = {
  gateway: { username: 'gateway', password: 'gateway-secret', acl: ['read command/+/+/req/#', 'write command///res/#'] },
  backend: { username: 'backend', password: 'backend-secret', acl: ['readwrite #'] },
};

interface Call {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** The application's command endpoint: records each call; `answer` decides the response (default 200 + Command-Status 200). */
async function startCallback() {
  const calls: Call[] = [];
  let answer = (_call: Call, res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json', 'command-status': '200' }).end('{"ok":true}');
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const call = { headers: req.headers, body };
      calls.push(call);
      answer(call, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/commands`,
    calls,
    answerWith(fn: typeof answer) {
      answer = fn;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let broker: Mosquitto;
let h: Harness;
let subscriptions: Subscriptions;
let callback: Awaited<ReturnType<typeof startCallback>>;
let backend: Watcher;
const started: SubscriptionHandle[] = [];

beforeAll(async () => {
  [broker, h, callback] = await Promise.all([startMosquitto({ users: Object.values(USERS) }), startHarness(), startCallback()]);
  process.env.REDELIVER_MQTT_CREDENTIALS_GATEWAY = JSON.stringify({
    username: USERS.gateway.username,
    password: USERS.gateway.password,
    brokers: [broker.url],
    // one gateway login for both tenants (its ACL reads every tenant's commands): the client id alone keeps their sessions apart
    tenants: ['acme', 'globex'],
  });
  subscriptions = new Subscriptions(h.client, { taskQueue: h.taskQueue });
});
afterAll(async () => {
  // a subscription left running would keep resubscribing: stop what a failed test left behind
  await Promise.all(started.map((s) => s.stop('test over').catch(() => undefined)));
  await backend?.close();
  await h?.stop();
  await callback?.close();
  await broker?.stop();
});

const BACKOFF = { jitter: 'none', initial: '200ms', min: '200ms', multiplier: 2, max: '1s' } as const;
const start = async (device: string, extra: object = {}) => {
  const handle = await subscriptions.start({
    tenant: 'acme',
    device,
    broker: { url: broker.url, credential: 'gateway' },
    callback: callback.url,
    policy: BACKOFF,
    downtimeThreshold: '1s',
    ...extra,
  });
  started.push(handle);
  return handle;
};
const sendCommand = (device: string, requestId: string, name: string, payload: string) =>
  backend.client.publishAsync(`command/acme/${device}/req/${requestId}/${name}`, payload, {
    qos: 1,
    properties: { contentType: 'application/json' },
  });
const callsFor = (requestId: string) => callback.calls.filter((c) => c.headers['command-request-id'] === requestId);
/** The client id a subscription connects with, as its workflow holds it (its input, made at start). */
async function clientIdOf(handle: SubscriptionHandle): Promise<string> {
  const { events } = await handle.workflow.fetchHistory();
  const input = events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  return defaultPayloadConverter.fromPayload<{ subscription: CommandSubscription }>(input).subscription.broker.clientId;
}
const durationMs = (d: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(d?.seconds ?? 0) * 1000 + Math.round((d?.nanos ?? 0) / 1e6);

/** The waits the workflow planned before each new subscription attempt: the timer right after each failed hold. */
async function resubscribeWaits(handle: SubscriptionHandle): Promise<number[]> {
  const events = (await handle.workflow.fetchHistory()).events!;
  const typeOf = new Map(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => [String(e.eventId), e.activityTaskScheduledEventAttributes!.activityType!.name]),
  );
  const waits: number[] = [];
  let afterFailedHold = false;
  for (const e of events) {
    if (e.activityTaskFailedEventAttributes)
      afterFailedHold = typeOf.get(String(e.activityTaskFailedEventAttributes.scheduledEventId)) === 'holdSubscription';
    if (e.timerStartedEventAttributes && afterFailedHold) {
      waits.push(durationMs(e.timerStartedEventAttributes.startToFireTimeout));
      afterFailedHold = false;
    }
  }
  return waits;
}

test('a command reaches the callback and its answer goes out as a command response; after the broker restarts, too', async () => {
  const device = `sensor-${randomUUID().slice(0, 8)}`;
  const handle = await start(device);
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );
  backend = await watch(broker.url, USERS.backend, 'command///res/#');

  // the callback is down for the first hand-off: it is retried with the backoff
  let first = true;
  callback.answerWith((_call, res) => {
    if (first) {
      first = false;
      res.writeHead(503).end();
    } else res.writeHead(200, { 'content-type': 'application/json', 'command-status': '200' }).end('{"ok":true}');
  });
  await sendCommand(device, 'r-1', 'setTemp', '{"t":22}');
  await waitFor(
    async () => backend.seen.filter((m) => m.topic === 'command///res/r-1/200'),
    (r) => r.length === 1,
    10_000,
    'the response to r-1',
  );
  expect(
    callsFor('r-1').map((c) => [
      c.headers['delivery-attempt'],
      c.headers['command-name'],
      c.headers['message-id'],
      c.headers['content-type'],
      c.body,
    ]),
  ).toEqual([
    ['1', 'setTemp', 'r-1', 'application/json', '{"t":22}'],
    ['2', 'setTemp', 'r-1', 'application/json', '{"t":22}'],
  ]);
  expect(backend.seen.find((m) => m.topic === 'command///res/r-1/200')).toMatchObject({
    payload: '{"ok":true}',
    qos: 1,
    userProperties: { 'message-id': 'response-r-1' },
  });
  const afterFirst = await handle.status();
  expect(afterFirst.commands).toEqual({ received: 1, handed: 1, responded: 1, failed: 0, queued: 0 });
  expect(afterFirst.recentCommands[0]).toMatchObject({
    requestId: 'r-1',
    name: 'setTemp',
    outcome: 'responded',
    status: 200,
    responseId: `delivery/acme/${device}/response-r-1`,
  });
  // the response is a delivery like any other
  expect(await h.redeliver.getHandle(`delivery/acme/${device}/response-r-1`).result()).toMatchObject({ outcome: 'delivered' });
  // … and takes its tenant's share of the task queue, as every delivery does (task-queue fairness)
  const response = await h.client.workflow.getHandle(`delivery/acme/${device}/response-r-1`).describe();
  expect(response.raw.workflowExecutionInfo?.priority?.fairnessKey).toBe('acme');

  // the broker dies and stays away past the downtime threshold (1 s here; the guide's 1 min by default)
  await broker.kill();
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting' && !!s.downtime.current?.countsAsDowntime,
    15_000,
    'a lost subscription counted as downtime',
  );
  await broker.start();
  const again = await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed' && s.holds > afterFirst.holds,
    15_000,
    'the subscription again',
  );
  // the outage is downtime (so may the first subscribing have been, on a slow machine: it counts from the start)
  const outages = <P extends { reason: string }>(periods: P[]) => periods.filter((p) => p.reason !== 'not subscribed yet');
  expect(again.downtime).toMatchObject({ outages: 1, current: null });
  expect(outages(again.downtime.periods)).toEqual([expect.objectContaining({ reason: expect.stringMatching(/closed|ECONNRESET/) })]);
  expect(outages(again.downtime.periods)[0]!.durationMs).toBeGreaterThan(1_000);
  expect(again.downtime.totalMs).toBe(again.downtime.periods.reduce((sum, p) => sum + p.durationMs, 0));

  await backend.close();
  backend = await watch(broker.url, USERS.backend, 'command///res/#');
  await sendCommand(device, 'r-2', 'setTemp', '{"t":23}');
  await waitFor(
    async () => backend.seen.filter((m) => m.topic === 'command///res/r-2/200'),
    (r) => r.length === 1,
    10_000,
    'the response to r-2',
  );
  expect(callsFor('r-2')).toHaveLength(1);

  // every resubscription waited as the policy says: 200 ms, 400 ms, 800 ms, then 1 s (its max)
  const waits = await resubscribeWaits(handle);
  expect(waits.length).toBeGreaterThanOrEqual(2);
  expect(waits).toEqual([200, 400, 800, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000].slice(0, waits.length));

  const result = await handle.stop('test over');
  expect(result).toMatchObject({
    outcome: 'stopped',
    reason: 'test over',
    commands: { received: 2, handed: 2, responded: 2, failed: 0, queued: 0 },
  });
  expect(outages(result.downtime.periods)).toHaveLength(1);
  expect((await handle.status()).state).toBe('stopped');
});

test('a one-way command is handed over without a response; a command that comes twice (same request id) is handed over once', async () => {
  const device = `sensor-${randomUUID().slice(0, 8)}`;
  const handle = await start(device);
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );
  callback.answerWith((_call, res) => res.writeHead(204).end());
  backend ??= await watch(broker.url, USERS.backend);
  await backend.client.publishAsync(`command/acme/${device}/req//reboot`, 'now', { qos: 1 });
  await sendCommand(device, 'r-9', 'ping', '{}');
  await sendCommand(device, 'r-9', 'ping', '{}');
  await waitFor(
    () => handle.status(),
    (s) => s.commands.handed === 2 && s.commands.queued === 0,
    10_000,
    'both commands handed over',
  );
  const reboot = callback.calls.find((c) => c.headers['command-name'] === 'reboot');
  expect(reboot?.headers['command-request-id']).toBeUndefined();
  expect(reboot?.body).toBe('now');
  expect(callsFor('r-9')).toHaveLength(1);
  const status = await handle.status();
  expect(status.commands).toMatchObject({ received: 2, handed: 2, responded: 1 });
  expect(status.recentCommands.map((c) => [c.name, c.outcome])).toEqual([
    ['reboot', 'handed'],
    ['ping', 'responded'],
  ]);
  await handle.stop();
});

test('a topic outside printable ASCII reaches the callback percent-encoded; a request id no response could carry is refused before the callback runs', async () => {
  const device = `sensor-${randomUUID().slice(0, 8)}`;
  const handle = await start(device);
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );
  callback.answerWith((_call, res) => res.writeHead(204).end());
  backend ??= await watch(broker.url, USERS.backend);
  // a one-way command whose name has a space, a "%" and a character outside Latin-1 (which HTTP headers cannot carry)
  const name = 'licht an/💡 100%';
  await backend.client.publishAsync(`command/acme/${device}/req//${name}`, 'lamp', { qos: 1 });
  // a two-way command whose request id has a space: its response could be neither addressed nor deduplicated
  await backend.client.publishAsync(`command/acme/${device}/req/r 1/ping`, 'bad-id', { qos: 1 });
  const status = await waitFor(
    () => handle.status(),
    (s) => s.commands.received === 2 && s.commands.queued === 0 && s.commands.handed + s.commands.failed === 2,
    10_000,
    'both commands done',
  );
  expect(callback.calls.filter((c) => c.body === 'bad-id')).toEqual([]);
  const lamp = callback.calls.find((c) => c.body === 'lamp');
  expect(lamp?.headers).toMatchObject({
    'command-name': 'licht%20an/%F0%9F%92%A1%20100%25',
    'command-topic': `command/acme/${device}/req//licht%20an/%F0%9F%92%A1%20100%25`,
  });
  expect(decodeURIComponent(lamp!.headers['command-name'] as string)).toBe(name);
  expect(status.recentCommands.map((c) => [c.name, c.outcome, c.code])).toEqual([
    [name, 'handed', 'http-204'],
    ['ping', 'rejected', 'invalid-command'],
  ]);
  await handle.stop();
});

test('commands sent while the connection is down wait in the broker for the subscription to come back', async () => {
  const device = `sensor-${randomUUID().slice(0, 8)}`;
  // a long wait before resubscribing, so that the command surely comes while nobody holds the session
  const handle = await start(device, { policy: { jitter: 'none', initial: '4s', min: '4s', max: '4s' } });
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );
  callback.answerWith((_call, res) => res.writeHead(204).end());
  backend ??= await watch(broker.url, USERS.backend);

  // another connection with the subscription's client id takes its session over (the broker drops the
  // subscription's connection: MQTT 5 says with DISCONNECT 0x8E, Mosquitto 2.0 just closes it), then
  // leaves, keeping the session; the next hold resumes it under the same client id
  const clientId = await clientIdOf(handle);
  const intruder = await mqtt.connectAsync(broker.url, {
    protocolVersion: 5,
    clientId,
    clean: false,
    username: USERS.gateway.username,
    password: USERS.gateway.password,
    reconnectPeriod: 0,
    properties: { sessionExpiryInterval: 3600 },
  });
  await intruder.endAsync();
  const lost = await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting',
    10_000,
    'the subscription lost',
  );
  expect(lost.lastError).toMatchObject({ class: 'connection', code: expect.stringMatching(/^(mqtt-0x8e|mqtt-closed)$/) });

  await sendCommand(device, 'r-q', 'queued', '{}');
  await waitFor(
    async () => callsFor('r-q'),
    (c) => c.length === 1,
    15_000,
    'the queued command at the callback',
  );
  const after = await handle.status();
  expect(after.holds).toBe(2);
  // it came out of the session as the subscription reconnected, before its SUBACK: it had waited in the broker
  const received = after.recentCommands.find((c) => c.requestId === 'r-q')!;
  expect(Date.parse(received.receivedAt)).toBeLessThanOrEqual(Date.parse(after.subscribedSince!));
  await handle.stop();
});

test("another tenant's subscription cannot take one's session, and its commands, over", async () => {
  const device = `sensor-${randomUUID().slice(0, 8)}`;
  const acme = await start(device);
  await waitFor(
    () => acme.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );
  const acmeClientId = await clientIdOf(acme);
  // what anyone could compute from the subscription id before: the hash of it
  const hashOfId = `rdsub${createHash('sha256').update(`subscription/acme/${device}`).digest('hex').slice(0, 18)}`;
  expect(acmeClientId).toMatch(/^rdsub[0-9a-f]{18}$/);
  expect(acmeClientId).not.toBe(hashOfId);

  // globex names acme's client id (the one it has, or the one it could compute): refused before anything starts
  const globex = (clientId: string) =>
    subscriptions.start({
      tenant: 'globex',
      device: 'gw-1',
      broker: { url: broker.url, credential: 'gateway', clientId },
      callback: callback.url,
      policy: BACKOFF,
    });
  for (const clientId of [acmeClientId, hashOfId]) {
    const refused = await globex(clientId).then(
      (handle) => (started.push(handle), undefined),
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as InvalidInputError).problems).toEqual([
      { field: 'broker.clientId', message: expect.stringContaining('must start with "globex/"') },
    ]);
  }
  // globex's own subscription, under its own prefix, runs beside acme's
  const own = await globex('globex/gw-1');
  started.push(own);
  await waitFor(
    () => own.status(),
    (s) => s.state === 'subscribed',
    10_000,
    "globex's subscription",
  );
  // starting acme's again with the same configuration finds it: a made-up client id is no part of the configuration
  expect((await start(device)).created).toBe(false);
  expect(await clientIdOf(acme)).toBe(acmeClientId);

  backend ??= await watch(broker.url, USERS.backend);
  callback.answerWith((_call, res) => res.writeHead(204).end());
  const ids = Array.from({ length: 6 }, (_, i) => `t-${device}-${i}`);
  for (const id of ids) await sendCommand(device, id, 'setTemp', '{}');
  await waitFor(
    async () => ids.map((id) => callsFor(id)),
    (calls) => calls.every((c) => c.length === 1),
    15_000,
    "acme's six commands at the callback",
  );
  // every one went to acme's subscription, none to globex's, and acme's session was never taken over
  expect(ids.flatMap((id) => callsFor(id)).map((c) => c.headers.tenant)).toEqual(Array(6).fill('acme'));
  expect(await acme.status()).toMatchObject({ holds: 1, commands: { received: 6, handed: 6 } });
  expect(await own.status()).toMatchObject({ holds: 1, commands: { received: 0 } });
  expect(broker.log()).not.toContain(`Client ${acmeClientId} already connected`);
  await Promise.all([acme.stop(), own.stop()]);
});

test('a subscription started before issue 31 keeps the client id it has, and starting it again finds it', async () => {
  const device = `sensor-${randomUUID().slice(0, 8)}`;
  const input = {
    tenant: 'acme',
    device,
    broker: { url: broker.url, credential: 'gateway' },
    callback: callback.url,
    policy: BACKOFF,
  };
  // started as the code before did: the client id a hash of the subscription id, the fingerprint over all but the start time
  const { submittedAt: _at, ...config } = subscriptions.validate(input);
  const hashOfId = `rdsub${createHash('sha256').update(config.subscriptionId).digest('hex').slice(0, 18)}`;
  const subscription = { ...config, submittedAt: Date.now(), broker: { ...config.broker, clientId: hashOfId } };
  const fingerprint = createHash('sha256')
    .update(JSON.stringify({ ...config, broker: subscription.broker }))
    .digest('base64url')
    .slice(0, 22);
  const legacy = await h.client.workflow.start('commandSubscriptionWorkflow', {
    ...subscriptionStartOptions(subscription),
    taskQueue: h.taskQueue,
    args: [{ subscription }],
    memo: { fingerprint, subscription: subscriptionFacts(subscription) },
  });
  const handle = subscriptions.getHandle('acme', device);
  started.push(handle);
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );
  const again = await subscriptions.start(input);
  expect(again.created).toBe(false);
  expect((await again.workflow.describe()).runId).toBe(legacy.firstExecutionRunId);
  expect(await clientIdOf(handle)).toBe(hashOfId);
  // its session is the one it had: a command reaches the callback through it
  backend ??= await watch(broker.url, USERS.backend);
  callback.answerWith((_call, res) => res.writeHead(204).end());
  await sendCommand(device, `l-${device}`, 'setTemp', '{}');
  await waitFor(
    async () => callsFor(`l-${device}`),
    (c) => c.length === 1,
    15_000,
    'the command at the callback',
  );
  await handle.stop();
});

test('a subscription whose credentials the broker refuses: rejected, with the time it was down', async () => {
  process.env.REDELIVER_MQTT_CREDENTIALS_WRONG = JSON.stringify({
    username: USERS.gateway.username,
    password: 'not-the-password',
    brokers: [broker.url],
    tenants: ['acme'],
  });
  const handle = await start(`sensor-${randomUUID().slice(0, 8)}`, {
    broker: { url: broker.url, credential: 'wrong' },
    downtimeThreshold: '1m',
  });
  const result = await handle.result();
  expect(result).toMatchObject({ outcome: 'rejected', lastError: { class: 'client', code: expect.stringMatching(/^mqtt-0x8[67]$/) } });
  expect(result.reason).toMatch(/CONNACK/);
  // never subscribed: no outage, and a spell below the threshold (the guide's minute) is no downtime
  expect(result.downtime).toMatchObject({ outages: 0, totalMs: 0, periods: [], current: null });
});

test('a subscription naming a credential with a broker it is not bound to: rejected, and that broker sees no connection', async () => {
  const attacker = (await startTcpListener('127.0.0.1'))!;
  try {
    const handle = await start(`sensor-${randomUUID().slice(0, 8)}`, {
      broker: { url: attacker.url('mqtt'), credential: 'gateway' },
      downtimeThreshold: '1m',
    });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'rejected', lastError: { class: 'client', code: 'secret-not-bound' } });
    expect(await attacker.settled()).toBe(0);
  } finally {
    await attacker.close();
  }
});

describe("a globex subscription naming acme's credential", () => {
  const hub = acmeHubPerTest();
  const input = () => ({
    tenant: 'globex',
    device: `valve-${randomUUID().slice(0, 8)}`,
    broker: { url: hub().url('mqtt'), credential: 'hub-acme', topic: 'command/acme/valve-7/req/#' },
    callback: callback.url,
    policy: BACKOFF,
  });

  test('is refused by the worker before it connects: rejected, secret-not-for-tenant; the broker sees nothing', async () => {
    // started where the worker's credentials cannot be seen: the worker alone decides
    const blind = new Subscriptions(h.client, { taskQueue: h.taskQueue, secretTenants: () => undefined });
    const handle = await blind.start(input());
    started.push(handle);
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'rejected', lastError: { class: 'client', code: 'secret-not-for-tenant' } });
    expect(result.reason).toContain('add it to "tenants" in REDELIVER_MQTT_CREDENTIALS_HUB_ACME');
    expect(await hub().settled()).toBe(0);
  });

  test("is refused at start, naming broker.credential, where the starter sees the worker's credentials", async () => {
    await expect(subscriptions.start(input())).rejects.toMatchObject({ problems: [{ field: 'broker.credential' }] });
    expect(await hub().settled()).toBe(0);
  });
});

test('from the shell: redeliver subscribe start, status, stop; bad flags name the field', async () => {
  const device = `cli-${randomUUID().slice(0, 8)}`;
  const conn = ['--address', testAddress(), '--task-queue', h.taskQueue];
  const begun = await runCli([
    'subscribe',
    'start',
    '--tenant',
    'acme',
    '--device',
    device,
    '--broker',
    broker.url,
    '--credential',
    'gateway',
    '--callback',
    callback.url,
    '--json',
    ...conn,
  ]);
  expect(begun.stderr).toBe('');
  expect(JSON.parse(begun.stdout)).toMatchObject({ subscriptionId: `subscription/acme/${device}`, created: true });
  const handle = subscriptions.getHandle('acme', device);
  started.push(handle);
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'subscribed',
    10_000,
    'the subscription',
  );

  const status = await runCli(['subscribe', 'status', `acme/${device}`, '--json', ...conn]);
  expect(status.code).toBe(0);
  expect(JSON.parse(status.stdout)).toMatchObject({
    subscriptionId: `subscription/acme/${device}`,
    state: 'subscribed',
    topic: `command/acme/${device}/req/#`,
    downtime: { thresholdMs: 60_000, totalMs: 0 },
  });
  const human = await runCli(['subscribe', 'status', `acme/${device}`, ...conn]);
  expect(human.stdout).toMatch(/state {7}subscribed/);

  const stopped = await runCli(['subscribe', 'stop', `acme/${device}`, '--reason', 'from the shell', '--json', ...conn]);
  expect(stopped.code).toBe(0);
  expect(JSON.parse(stopped.stdout)).toMatchObject({ outcome: 'stopped', reason: 'from the shell' });

  const bad = await runCli([
    'subscribe',
    'start',
    '--tenant',
    'acme',
    '--device',
    device,
    '--broker',
    'http://x',
    '--callback',
    'mqtt://y',
    ...conn,
  ]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/broker.url: scheme "http" is not supported/);
  expect(bad.stderr).toMatch(/callback.url: scheme "mqtt" is not supported/);
});
