import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { partsOf } from '../../../src/worker-services/worker-parts';
import { idPath, startApi, type TestApi } from '../../support/api';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/*
 * An endpoint's controls over HTTP (docs/http-api.md, "Endpoint controls"): what `redeliver endpoint set|show|pause|resume|disable`
 * does, on a real server and worker. Each test has an endpoint (a receiver) of its own, set before anything is
 * sent to it, so that the workers' first read of it already says so.
 */

const A = `a-${randomUUID().slice(0, 8)}`;
const B = `b-${randomUUID().slice(0, 8)}`;
const ROLES = ['produce', 'operate', 'read'];
const KEYS = { all: `key-all-${randomUUID()}`, a: `key-a-${randomUUID()}`, b: `key-b-${randomUUID()}` };
let h: Harness;
let api: TestApi;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await startHarness(testAddress());
  api = await startApi(h.redeliver, [
    { key: KEYS.all, tenants: ['*'], roles: ROLES },
    { key: KEYS.a, tenants: [A], roles: ROLES },
    { key: KEYS.b, tenants: [B], roles: ROLES },
  ]);
});
afterAll(async () => {
  await api?.close();
  await h?.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

/** A receiver of its own, answering 202 after `delayMs`, and its endpoint's path in the API. */
async function newEndpoint(delayMs = 0) {
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.route('/in', () => ({ status: 202, delayMs }));
  const host = new URL(receiver.url).host;
  return { receiver, host, path: `/v1/endpoints/${encodeURIComponent(host)}` };
}

const event = (receiver: Receiver): DeliveryInput => ({
  kind: 'event',
  tenant: A,
  device: 'd1',
  messageId: randomUUID(),
  target: `${receiver.url}/in`,
  payload: { v: 1 },
  policy: { initial: '100ms', min: '100ms', max: '1s' },
});

async function submit(receiver: Receiver): Promise<string> {
  const answer = await api.call('POST', '/v1/deliveries', KEYS.a, event(receiver));
  expect(answer.status).toBe(202);
  return answer.json.deliveryId as string;
}

/** Why the delivery's pending attempt waits (the activity's last failure), '' when none has. */
async function heldBecause(deliveryId: string): Promise<string> {
  const described = await h.redeliver.getHandle(deliveryId).workflow.describe();
  return described.raw.pendingActivities?.[0]?.lastFailure?.message ?? '';
}

/** The most requests the receiver had in flight at once. */
function mostAtOnce(requests: ReceivedRequest[]): number {
  const edges = requests.flatMap((r) => [
    [r.startedAt, 1],
    [r.endedAt ?? Infinity, -1],
  ]);
  edges.sort((x, y) => x[0]! - y[0]! || x[1]! - y[1]!);
  let now = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (now += step!));
  return most;
}

test('PATCH sets the settings every worker reads, GET shows them, null gives a field back to the default', async () => {
  const e = await newEndpoint();
  const change = { maxInFlight: 50, rate: '200/s', breaker: 'on', probeEvery: '5s', autoDisableAfter: '1h' };
  const set = await api.call('PATCH', `${e.path}/settings`, KEYS.all, change);
  const settings = { maxInFlight: 50, rate: 200, breaker: 'on', probeEvery: 5000, autoDisableAfter: 3_600_000 };
  expect(set).toMatchObject({ status: 200, json: { endpoint: e.host, settings } });
  // where the workers read it: the endpoint's workflow
  expect((await h.redeliver.endpoint(e.host).control()).settings).toEqual(settings);
  expect((await api.call('GET', e.path, KEYS.all)).json).toEqual({ endpoint: e.host, settings });

  const back = await api.call('PATCH', `${e.path}/settings`, KEYS.all, { rate: null, maxInFlight: 'off' });
  expect(back.json.settings).toEqual({ maxInFlight: 'off', breaker: 'on', probeEvery: 5000, autoDisableAfter: 3_600_000 });
  // a URL of the endpoint names it too
  const byUrl = await api.call('GET', `/v1/endpoints/${encodeURIComponent(`${e.receiver.url}/in`)}`, KEYS.all);
  expect(byUrl.json).toEqual({ endpoint: e.host, settings: back.json.settings });
});

test('a limit set over HTTP holds for deliveries: maxInFlight 1, one request at a time, all delivered', async () => {
  const e = await newEndpoint(300);
  expect((await api.call('PATCH', `${e.path}/settings`, KEYS.all, { maxInFlight: 1 })).status).toBe(200);
  const ids = await Promise.all([1, 2, 3, 4].map(() => submit(e.receiver)));
  const results = await Promise.all(ids.map((id) => h.redeliver.getHandle(id).result()));
  expect(results.map((r) => r.outcome)).toEqual(Array(4).fill('delivered'));
  expect(e.receiver.requests).toHaveLength(4);
  expect(mostAtOnce(e.receiver.requests)).toBe(1);
});

test('pause over HTTP holds every delivery, none sent; resume delivers them', async () => {
  const e = await newEndpoint();
  const paused = await api.call('POST', `${e.path}/pause`, KEYS.all, { reason: 'receiver maintenance' });
  expect(paused).toMatchObject({
    status: 200,
    json: { endpoint: e.host, mode: { state: 'paused', reason: 'receiver maintenance', by: 'operator' } },
  });
  expect((await api.call('GET', e.path, KEYS.all)).json.mode).toMatchObject({ state: 'paused', since: expect.any(Number) });
  const ids = await Promise.all([1, 2, 3].map(() => submit(e.receiver)));
  await waitFor(
    () => Promise.all(ids.map(heldBecause)),
    (reasons) => reasons.every((r) => r.includes('is paused: receiver maintenance')),
    30_000,
    'every delivery to be held by the pause',
  );
  expect(e.receiver.requests).toHaveLength(0);

  const resumed = await api.call('POST', `${e.path}/resume`, KEYS.all);
  expect(resumed).toMatchObject({ status: 200, json: { endpoint: e.host, settings: {} } });
  expect(resumed.json.mode).toBeUndefined();
  const results = await Promise.all(ids.map((id) => h.redeliver.getHandle(id).result()));
  expect(results.map((r) => [r.outcome, r.attempts])).toEqual(Array(3).fill(['delivered', 1]));
}, 90_000);

test('disable over HTTP ends deliveries as dead letters saying so; enable, then a redrive delivers', async () => {
  const e = await newEndpoint();
  expect((await api.call('POST', `${e.path}/disable`, KEYS.all, { reason: 'endpoint retired' })).json.mode).toMatchObject({
    state: 'disabled',
    reason: 'endpoint retired',
  });
  const id = await submit(e.receiver);
  const result = await h.redeliver.getHandle(id).result();
  expect(result.outcome).toBe('rejected');
  expect(result.reason).toContain('is disabled: endpoint retired');
  expect(e.receiver.requests).toHaveLength(0);

  expect((await api.call('POST', `${e.path}/enable`, KEYS.all)).json.mode).toBeUndefined();
  // the worker reads the endpoint's control again within CONTROL_TTL_MS; read it now rather than wait for that
  await partsOf(h.worker)!.controls!.refresh(e.host);
  expect((await api.call('POST', `/v1/dead-letters/${idPath(id)}/redrive`, KEYS.a)).status).toBe(202);
  expect((await h.redeliver.getHandle(id).result()).outcome).toBe('delivered');
  expect(e.receiver.requests).toHaveLength(1);
}, 90_000);

test('bad input: 400 naming every wrong field', async () => {
  const e = await newEndpoint();
  const bad = { maxInFlight: 0, rate: 'fast', breaker: 'maybe', probeEvery: '1ms', autoDisableAfter: 'soon', colour: 'red' };
  const answer = await api.call('PATCH', `${e.path}/settings`, KEYS.all, bad);
  expect(answer.status).toBe(400);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.json.problems.map((p: { field: string }) => p.field).sort()).toEqual(
    ['autoDisableAfter', 'breaker', 'colour', 'maxInFlight', 'probeEvery', 'rate'].sort(),
  );
  expect(answer.json.problems.find((p: { field: string }) => p.field === 'maxInFlight').message).toContain('from 1 to 100000');
  for (const body of [{}, [1], 'null'])
    expect((await api.call('PATCH', `${e.path}/settings`, KEYS.all, body)).json.problems).toEqual([
      { field: '(body)', message: expect.stringContaining('maxInFlight, rate, breaker') },
    ]);
  const long = await api.call('POST', `${e.path}/pause`, KEYS.all, { reason: 'x'.repeat(501) });
  expect(long.json.problems).toEqual([{ field: 'reason', message: expect.any(String) }]);
  for (const endpoint of ['a b', 'x/y'])
    expect((await api.call('GET', `/v1/endpoints/${encodeURIComponent(endpoint)}`, KEYS.all)).json.problems).toEqual([
      { field: 'endpoint', message: expect.any(String) },
    ]);
  // nothing of it was applied
  expect((await api.call('GET', e.path, KEYS.all)).json).toEqual({ endpoint: e.host, settings: {} });
});

test("a key of some tenants: changes are 403 (they hold every tenant's deliveries); it reads only endpoints its tenants send to", async () => {
  const e = await newEndpoint();
  const id = await submit(e.receiver);
  await h.redeliver.getHandle(id).result();
  const changes: [string, string, unknown?][] = [
    ['PATCH', `${e.path}/settings`, { maxInFlight: 1 }],
    ['POST', `${e.path}/pause`, {}],
    ['POST', `${e.path}/resume`],
    ['POST', `${e.path}/disable`, {}],
    ['POST', `${e.path}/enable`],
  ];
  for (const [method, path, body] of changes) {
    const answer = await api.call(method, path, KEYS.a, body);
    expect([path, answer.status]).toEqual([path, 403]);
    expect(answer.json.detail).toContain('["*"]');
  }
  expect((await api.call('GET', e.path, KEYS.all)).json).toEqual({ endpoint: e.host, settings: {} });
  // A sends to it (visibility lists A's delivery within a few seconds); B does not
  await waitFor(
    () => api.call('GET', e.path, KEYS.a),
    (r) => r.status === 200,
    20_000,
    "tenant A's key to see the endpoint",
  );
  expect((await api.call('GET', e.path, KEYS.b)).status).toBe(404);
});

test('no worker to apply a change: 503 with Retry-After, saying so, within the wait', async () => {
  const connection = await connectClient({ address: testAddress() });
  const taskQueue = `no-worker-${randomUUID()}`;
  const lonely = await startApi(new Redeliver(new Client({ connection }), { taskQueue }), [
    { key: KEYS.all, tenants: ['*'], roles: ROLES },
  ]);
  try {
    const answer = await lonely.call('PATCH', '/v1/endpoints/lonely.example.com/settings', KEYS.all, { rate: 5 });
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(answer.json.detail).toContain(`no worker of task queue ${taskQueue} applied the change`);
  } finally {
    await lonely.close();
    await connection.close();
  }
});

test('GET /v1/endpoints and /v1/downtime page: at most `limit` endpoints a page, every endpoint once across the pages', async () => {
  const hosts = await Promise.all(
    Array.from({ length: 5 }, async () => {
      const e = await newEndpoint();
      // the endpoint's workflow starts with its first setting: listed as any endpoint a worker reported
      await h.redeliver.endpoint(e.host).set({ rate: '100/s' });
      return e.host;
    }),
  );
  const pages = async (route: string, items: string, limit: number) => {
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const answer = await api.call('GET', `${route}?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, KEYS.all);
      expect(answer.status).toBe(200);
      const page = answer.json as Record<string, { endpoint: string }[]> & { nextCursor: string | null };
      sizes.push(page[items]!.length);
      seen.push(...page[items]!.map((e) => e.endpoint));
      cursor = page.nextCursor;
    } while (cursor);
    return { seen, sizes };
  };
  // visibility lists new workflows within a few seconds
  await waitFor(
    () => pages('/v1/endpoints', 'endpoints', 100),
    ({ seen }) => hosts.every((host) => seen.includes(host)),
    20_000,
    'the endpoints listed',
  );

  for (const [route, items] of [
    ['/v1/endpoints', 'endpoints'],
    ['/v1/downtime', 'downtime'],
  ] as const) {
    const { seen, sizes } = await pages(route, items, 2);
    expect(sizes.every((n) => n <= 2)).toBe(true);
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(hosts));
  }
  for (const limit of ['0', '101', 'many'])
    expect((await api.call('GET', `/v1/endpoints?limit=${limit}`, KEYS.all)).json.problems).toEqual([
      { field: 'limit', message: 'must be a whole number from 1 to 100' },
    ]);
  expect((await api.call('GET', '/v1/downtime?cursor=not-a-cursor', KEYS.all)).json.problems).toEqual([
    { field: 'cursor', message: 'is not the nextCursor of a page of this listing' },
  ]);
});
