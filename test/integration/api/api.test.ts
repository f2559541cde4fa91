import { randomUUID } from 'node:crypto';
import { ROUTES } from '../../../src/api/routes';
import { batchWorkflowId } from '../../../src/contract';
import type { DeliveryInput } from '../../../src/delivery/types';
import { type InvalidInputError } from '../../../src/errors';
import { validateDelivery } from '../../../src/validation/delivery';
import { MAX_DELIVERY_ID_LENGTH } from '../../../src/validation/limits';
import { runCli } from '../../support/cli';
import { useHarnessAndReceiver } from '../../support/setup';
import { idPath, startApi, type TestApi } from '../../support/api';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const env = useHarnessAndReceiver();
const A = `a-${randomUUID().slice(0, 8)}`;
const B = `b-${randomUUID().slice(0, 8)}`;
/** A tenant as long as submit accepts (128 characters). */
const LONG = `long-${randomUUID()}-`.padEnd(128, 'x');
const KEYS = {
  long: `key-long-${randomUUID()}`,
  a: `key-a-${randomUUID()}`,
  b: `key-b-${randomUUID()}`,
  aRead: `key-a-read-${randomUUID()}`,
  all: `key-all-${randomUUID()}`,
};
const ALL_ROLES = ['produce', 'operate', 'read'];
let api: TestApi;

beforeAll(async () => {
  api = await startApi(env.h.redeliver, [
    { key: KEYS.a, tenants: [A], roles: ALL_ROLES, name: 'tenant-a' },
    { key: KEYS.b, tenants: [B], roles: ALL_ROLES },
    { key: KEYS.aRead, tenants: [A], roles: ['read'] },
    { key: KEYS.all, tenants: ['*'], roles: ['read'] },
    { key: KEYS.long, tenants: [LONG], roles: ALL_ROLES },
  ]);
});
afterAll(() => api?.close());

const event = (over: Partial<DeliveryInput> = {}): DeliveryInput => ({
  kind: 'event',
  tenant: A,
  device: 'd1',
  messageId: randomUUID(),
  target: `${env.receiver.url}/in`,
  payload: { v: 1 },
  ...over,
});

/** A delivery of tenant A that waits (its endpoint answers 503 until told otherwise), for the controls. */
async function waitingDelivery(): Promise<string> {
  const input = event({ target: `${env.receiver.url}/down`, policy: { initial: '1h', min: '1h', max: '1h', jitter: 'none' } });
  env.receiver.route('/down', () => ({ status: 503 }));
  const { json } = await api.call('POST', '/v1/deliveries', KEYS.a, input);
  await waitFor(
    () => api.call('GET', `/v1/deliveries/${idPath(json.deliveryId)}`, KEYS.a),
    (r) => r.json.state === 'waiting',
    20_000,
    'the delivery to wait',
  );
  return json.deliveryId as string;
}

/** A dead letter of tenant A (its endpoint refuses it: 400). */
async function deadLetter(): Promise<string> {
  env.receiver.route('/refuse', ({ nth }) => ({ status: nth === 1 ? 400 : 202 }));
  const { json } = await api.call('POST', '/v1/deliveries', KEYS.a, event({ target: `${env.receiver.url}/refuse` }));
  await env.h.redeliver.getHandle(json.deliveryId).result();
  return json.deliveryId as string;
}

describe('submit', () => {
  test('202 with the delivery id; the same message again answers the existing one; another message under its id is 409 naming messageId', async () => {
    const input = event();
    const first = await api.call('POST', '/v1/deliveries', KEYS.a, input);
    expect(first.status).toBe(202);
    expect(first.json).toEqual({ deliveryId: `delivery/${A}/d1/${input.messageId}`, created: true });
    await waitFor(
      async () => env.receiver.of(input.messageId!).length,
      (n) => n === 1,
      20_000,
      'the message at the receiver',
    );
    const again = await api.call('POST', '/v1/deliveries', KEYS.a, input);
    expect(again).toMatchObject({ status: 202, json: { deliveryId: first.json.deliveryId, created: false } });
    const clash = await api.call('POST', '/v1/deliveries', KEYS.a, { ...input, payload: { v: 2 } });
    expect(clash.status).toBe(409);
    expect(clash.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(clash.json.problems).toEqual([{ field: 'messageId', message: expect.stringContaining('different message') }]);
  });

  test('orderingKey: the next of a key is queued behind the one before it, and goes once that one has ended', async () => {
    env.receiver.route('/down', () => ({ status: 503 }));
    const orderingKey = `k-${randomUUID().slice(0, 8)}`;
    const policy = { initial: '1h', min: '1h', max: '1h', jitter: 'none' } as const;
    const first = await api.call('POST', '/v1/deliveries', KEYS.a, event({ orderingKey, target: `${env.receiver.url}/down`, policy }));
    const next = event({ orderingKey });
    const second = await api.call('POST', '/v1/deliveries', KEYS.a, next);
    expect([first.status, second.status]).toEqual([202, 202]);
    const queued = await waitFor(
      () => api.call('GET', `/v1/deliveries/${idPath(second.json.deliveryId)}`, KEYS.a),
      (r) => r.json.ordering?.behind === first.json.deliveryId,
      20_000,
      'the second queued behind the first',
    );
    expect(queued.json).toMatchObject({ state: 'queued', ordering: { key: orderingKey, admitted: false } });
    expect(env.receiver.of(next.messageId!)).toEqual([]);
    expect((await api.call('POST', `/v1/deliveries/${idPath(first.json.deliveryId)}/cancel`, KEYS.a)).status).toBe(200);
    await waitFor(
      async () => env.receiver.of(next.messageId!).length,
      (n) => n === 1,
      20_000,
      'the second at the receiver once the first was cancelled',
    );
  });

  test('400 lists every wrong field, as the client API does', async () => {
    const bad = { kind: 'alert', tenant: A, device: 'd 1', target: 'ftp://x', payload: 1, policy: { max: 'soon' } };
    const answer = await api.call('POST', '/v1/deliveries', KEYS.a, bad);
    let expected: unknown;
    try {
      validateDelivery(bad);
    } catch (err) {
      expected = (err as InvalidInputError).problems;
    }
    expect(answer.status).toBe(400);
    expect(answer.json.problems).toEqual(expected);
    expect((expected as unknown[]).length).toBeGreaterThanOrEqual(4);
  });

  test('an array takes the batch path: each id in order, with its batch; every message arrives', async () => {
    const inputs = [event({ device: 'd2' }), event({ device: 'd3' }), event({ device: 'd2' })];
    const answer = await api.call('POST', '/v1/deliveries', KEYS.a, inputs);
    expect(answer.status).toBe(202);
    expect(answer.json.map((a: { deliveryId: string }) => a.deliveryId)).toEqual(
      inputs.map((i) => `delivery/${A}/${i.device}/${i.messageId}`),
    );
    expect(new Set(answer.json.map((a: { batchId: string }) => a.batchId)).size).toBe(1);
    await waitFor(
      async () => inputs.filter((i) => env.receiver.of(i.messageId!).length > 0).length,
      (n) => n === 3,
      20_000,
      'the batch at the receiver',
    );
    // without a message id, each gets one from its contents, answered in order
    const unnamed = await api.call(
      'POST',
      '/v1/deliveries',
      KEYS.a,
      [1, 2].map((v) => event({ messageId: undefined, payload: { v } })),
    );
    expect(unnamed.json).toEqual(
      [0, 1].map(() => ({ deliveryId: expect.stringMatching(`^delivery/${A}/d1/content-[\\w-]{32}$`), batchId: expect.any(String) })),
    );
    expect(unnamed.json[0].deliveryId).not.toBe(unnamed.json[1].deliveryId);
    const bad = await api.call('POST', '/v1/deliveries', KEYS.a, [event(), { ...event(), kind: 'x' }]);
    expect(bad.status).toBe(400);
    expect(bad.json.problems).toEqual([{ field: '[1].kind', message: expect.any(String) }]);
  });

  test('an array without message ids POSTed twice sends each message once: the ids, hence the batch, come from the contents', async () => {
    const path = `/again-${randomUUID().slice(0, 8)}`;
    const inputs = Array.from({ length: 50 }, (_, n) =>
      event({ messageId: undefined, target: `${env.receiver.url}${path}`, payload: { n } }),
    );
    const first = await api.call('POST', '/v1/deliveries', KEYS.a, inputs);
    const again = await api.call('POST', '/v1/deliveries', KEYS.a, inputs);
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.json).toEqual(first.json);
    const batchIds = new Set([...first.json, ...again.json].map((a: { batchId: string }) => a.batchId));
    // every batch either POST started has made its first attempts: what the receiver has is all it gets
    await Promise.all([...batchIds].map((id) => env.h.client.workflow.getHandle(batchWorkflowId(A, id)).result()));
    const received = env.receiver.requests.filter((r) => r.path === path);
    expect(received).toHaveLength(50);
    expect(new Set(received.map((r) => r.messageId)).size).toBe(50);
  });

  test('401 without a key or with an unknown one; 403 for a tenant the key does not hold, or a role it lacks', async () => {
    const none = await api.call('POST', '/v1/deliveries', null, event());
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await api.call('POST', '/v1/deliveries', 'not-a-key-of-this-server', event())).status).toBe(401);
    const foreign = await api.call('POST', '/v1/deliveries', KEYS.b, event());
    expect(foreign.status).toBe(403);
    expect(foreign.json.problems).toEqual([{ field: 'tenant', message: `this key does not hold tenant ${A}` }]);
    const inArray = await api.call('POST', '/v1/deliveries', KEYS.b, [event({ tenant: B }), event()]);
    expect(inArray.json.problems).toEqual([{ field: '[1].tenant', message: expect.any(String) }]);
    const readOnly = await api.call('POST', '/v1/deliveries', KEYS.aRead, event());
    expect(readOnly).toMatchObject({ status: 403, json: { detail: 'this key lacks the produce role' } });
  });
});

describe('status, lists and controls', () => {
  test('GET a delivery answers what `redeliver status --json` prints', async () => {
    const id = await deadLetter();
    const answer = await api.call('GET', `/v1/deliveries/${idPath(id)}`, KEYS.aRead);
    expect(answer.status).toBe(200);
    const cli = await runCli(['status', id, '--json', '--address', testAddress(), '--task-queue', env.h.taskQueue]);
    expect(cli.code).toBe(0);
    expect(answer.json).toEqual(JSON.parse(cli.stdout));
    expect(answer.json).toMatchObject({ deliveryId: id, state: 'rejected', lastError: { code: 'http-400' } });
  });

  test("lists are paged, filtered like the CLI, and hold only the key's tenants", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api.call('POST', '/v1/deliveries', KEYS.a, event({ device: 'paged' }))).json.deliveryId);
    await api.call('POST', '/v1/deliveries', KEYS.b, event({ tenant: B, device: 'paged' }));
    // ended, so that none moves in the listing between two pages (visibility pages are not a snapshot)
    await Promise.all(ids.map((id) => env.h.redeliver.getHandle(id).result()));
    const read = async (cursor?: string) =>
      (await api.call('GET', `/v1/deliveries?device=paged&state=delivered&limit=2${cursor ? `&cursor=${cursor}` : ''}`, KEYS.a)).json;
    await waitFor(
      () => api.call('GET', '/v1/deliveries?device=paged&state=delivered', KEYS.a),
      (r) => r.json.deliveries.length === 3,
      15_000,
      'the three delivered in the listing',
    );
    const first = await read();
    expect(first.deliveries).toHaveLength(2);
    const second = await read(first.nextCursor);
    const seen = [...first.deliveries, ...second.deliveries].map((d: { deliveryId: string }) => d.deliveryId);
    expect(seen.sort()).toEqual([...ids].sort());
    expect(second.nextCursor).toBeNull();
    const all = await api.call('GET', '/v1/deliveries?device=paged&limit=100', KEYS.all);
    expect(all.json.deliveries.map((d: { tenant: string }) => d.tenant)).toContain(B);
    const bad = await api.call('GET', '/v1/deliveries?state=lost&kind=x&limit=0&since=never', KEYS.a);
    expect(bad.status).toBe(400);
    expect(bad.json.problems.map((p: { field: string }) => p.field).sort()).toEqual(['kind', 'limit']);
    const badState = await api.call('GET', '/v1/deliveries?state=lost&since=never', KEYS.a);
    expect(badState.json.problems.map((p: { field: string }) => p.field)).toEqual(['state', 'since']);
    expect((await api.call('GET', `/v1/deliveries?tenant=${B}`, KEYS.a)).status).toBe(403);
  });

  test('pause, resume, retry-now and cancel; a refused control is 409 with its kind', async () => {
    const id = await waitingDelivery();
    const path = `/v1/deliveries/${idPath(id)}`;
    const paused = await api.call('POST', `${path}/pause`, KEYS.a, { reason: 'maintenance' });
    expect(paused).toMatchObject({ status: 200, json: { state: 'paused', pause: { reason: 'maintenance' } } });
    const again = await api.call('POST', `${path}/pause`, KEYS.a);
    expect(again).toMatchObject({ status: 409, json: { kind: 'AlreadyPaused' } });
    expect((await api.call('POST', `${path}/resume`, KEYS.a)).status).toBe(200);
    await waitFor(
      () => api.call('GET', path, KEYS.a),
      (r) => r.json.state === 'waiting',
      15_000,
      'waiting again',
    );
    const attempts = env.receiver.requests.filter((r) => r.path === '/down' && id.endsWith(r.messageId!)).length;
    expect((await api.call('POST', `${path}/retry-now`, KEYS.a)).status).toBe(200);
    await waitFor(
      async () => env.receiver.requests.filter((r) => r.path === '/down' && id.endsWith(r.messageId!)).length,
      (n) => n > attempts,
      15_000,
      'the attempt retry-now asked for',
    );
    expect((await api.call('POST', `${path}/retry-now`, KEYS.aRead)).status).toBe(403);
    const cancelled = await api.call('POST', `${path}/cancel`, KEYS.a);
    expect(cancelled).toMatchObject({ status: 200, json: { state: 'cancelled' } });
    expect((await api.call('POST', `${path}/resume`, KEYS.a)).json.kind).toBe('Ended');
  });

  test('a delivery of the longest id submit accepts (427 characters) is read, paused, resumed and cancelled over HTTP', async () => {
    env.receiver.route('/down', () => ({ status: 503 }));
    // characters the path must encode too: the bound is on the id, not on its encoded form
    const messageId = `m%.:${randomUUID()}`.padEnd(160, 'x');
    const input = event({
      tenant: LONG,
      device: 'd'.repeat(128),
      messageId,
      target: `${env.receiver.url}/down`,
      policy: { initial: '1h', min: '1h', max: '1h', jitter: 'none' },
    });
    const submitted = await api.call('POST', '/v1/deliveries', KEYS.long, input);
    expect(submitted.status).toBe(202);
    const id = submitted.json.deliveryId as string;
    expect(id).toHaveLength(MAX_DELIVERY_ID_LENGTH);
    const path = `/v1/deliveries/${idPath(id)}`;
    await waitFor(
      () => api.call('GET', path, KEYS.long),
      (r) => r.json?.state === 'waiting',
      20_000,
      'the delivery to wait',
    );
    expect(await api.call('POST', `${path}/pause`, KEYS.long, { reason: 'long' })).toMatchObject({
      status: 200,
      json: { deliveryId: id, state: 'paused' },
    });
    expect(await api.call('POST', `${path}/resume`, KEYS.long)).toMatchObject({ status: 200, json: { deliveryId: id } });
    expect(await api.call('POST', `${path}/cancel`, KEYS.long)).toMatchObject({
      status: 200,
      json: { deliveryId: id, state: 'cancelled' },
    });
    expect(await api.call('GET', path, KEYS.long)).toMatchObject({ status: 200, json: { state: 'cancelled' } });
  });
});

describe('dead letters and redrive', () => {
  test('list, show, redrive one; a bulk redrive is a job to poll', async () => {
    const id = await deadLetter();
    const list = await waitFor(
      () => api.call('GET', '/v1/dead-letters?errorClass=client', KEYS.a),
      (r) => r.json.deliveries.some((d: { deliveryId: string }) => d.deliveryId === id),
      15_000,
      'the dead letter listed',
    );
    expect(list.json.deliveries.every((d: { state: string }) => d.state === 'rejected')).toBe(true);
    const shown = await api.call('GET', `/v1/dead-letters/${idPath(id)}`, KEYS.a);
    expect(shown).toMatchObject({ status: 200, json: { outcome: 'rejected', message: { body: '{"v":1}' } } });
    const redriven = await api.call('POST', `/v1/dead-letters/${idPath(id)}/redrive`, KEYS.a);
    expect(redriven).toMatchObject({ status: 202, json: { deliveryId: id, redriven: true } });
    await env.h.redeliver.getHandle(id).result();
    expect((await api.call('GET', `/v1/deliveries/${idPath(id)}`, KEYS.a)).json.state).toBe('delivered');
    expect((await api.call('GET', `/v1/dead-letters/${idPath(id)}`, KEYS.a)).status).toBe(404);
    expect((await api.call('POST', `/v1/dead-letters/${idPath(id)}/redrive`, KEYS.a)).json.kind).toBe('NotADeadLetter');

    const letters = [await deadLetter(), await deadLetter()];
    await waitFor(
      () => api.call('GET', '/v1/dead-letters?device=d1&state=rejected', KEYS.a),
      (r) => letters.every((l) => r.json.deliveries.some((d: { deliveryId: string }) => d.deliveryId === l)),
      15_000,
      'both dead letters listed',
    );
    const job = await api.call('POST', '/v1/redrives', KEYS.a, { state: 'rejected', device: 'd1' });
    expect(job).toMatchObject({ status: 202, json: { state: 'running' } });
    const done = await waitFor(
      () => api.call('GET', `/v1/redrives/${job.json.jobId}`, KEYS.a),
      (r) => r.json.state === 'done',
      20_000,
      'the job done',
    );
    expect(done.json.redriven).toEqual(expect.arrayContaining(letters));
    expect(done.json.failed).toEqual([]);
    expect((await api.call('GET', `/v1/redrives/${job.json.jobId}`, KEYS.b)).status).toBe(404);
  });
});

describe('tenant isolation', () => {
  test("every route, with another tenant's key: 404 for A's things, A's never in its lists, 403 when it names tenant A", async () => {
    const waiting = await waitingDelivery();
    const letter = await deadLetter();
    const job = (await api.call('POST', '/v1/redrives', KEYS.a, { device: 'nothing-here' })).json.jobId;
    const subscription = { tenant: A, device: 'd1', broker: 'mqtt://127.0.0.1:1', callback: `${env.receiver.url}/commands` };
    const started = await api.call('POST', '/v1/subscriptions', KEYS.a, subscription);
    expect(started).toMatchObject({ status: 202, json: { subscriptionId: `subscription/${A}/d1`, created: true } });
    const sub = idPath(started.json.subscriptionId);
    const endpointPath = encodeURIComponent(new URL(env.receiver.url).host);
    const requests: Record<string, [string, string, unknown?]> = {
      submit: ['POST', '/v1/deliveries', event()],
      listDeliveries: ['GET', '/v1/deliveries'],
      getDelivery: ['GET', `/v1/deliveries/${idPath(waiting)}`],
      retryNowDelivery: ['POST', `/v1/deliveries/${idPath(waiting)}/retry-now`],
      pauseDelivery: ['POST', `/v1/deliveries/${idPath(waiting)}/pause`, {}],
      resumeDelivery: ['POST', `/v1/deliveries/${idPath(waiting)}/resume`],
      cancelDelivery: ['POST', `/v1/deliveries/${idPath(waiting)}/cancel`],
      listDeadLetters: ['GET', '/v1/dead-letters'],
      getDeadLetter: ['GET', `/v1/dead-letters/${idPath(letter)}`],
      redrive: ['POST', `/v1/dead-letters/${idPath(letter)}/redrive`],
      redriveAll: ['POST', '/v1/redrives', {}],
      getRedrive: ['GET', `/v1/redrives/${job}`],
      listEndpoints: ['GET', '/v1/endpoints'],
      getDowntime: ['GET', '/v1/downtime'],
      getEndpoint: ['GET', `/v1/endpoints/${endpointPath}`],
      setEndpoint: ['PATCH', `/v1/endpoints/${endpointPath}/settings`, { maxInFlight: 1 }],
      pauseEndpoint: ['POST', `/v1/endpoints/${endpointPath}/pause`, {}],
      resumeEndpoint: ['POST', `/v1/endpoints/${endpointPath}/resume`],
      disableEndpoint: ['POST', `/v1/endpoints/${endpointPath}/disable`, {}],
      enableEndpoint: ['POST', `/v1/endpoints/${endpointPath}/enable`],
      startSubscription: ['POST', '/v1/subscriptions', subscription],
      getSubscription: ['GET', `/v1/subscriptions/${sub}`],
      stopSubscription: ['POST', `/v1/subscriptions/${sub}/stop`, {}],
    };
    expect(Object.keys(requests).sort()).toEqual(ROUTES.map((r) => r.operationId).sort());
    for (const [operation, [method, path, body]] of Object.entries(requests)) {
      const answer = await api.call(method, path, KEYS.b, body);
      const text = JSON.stringify(answer.json);
      // an endpoint's controls hold every tenant's deliveries to it: a change takes a key of every tenant
      if (['submit', 'startSubscription'].includes(operation) || (method !== 'GET' && operation.endsWith('Endpoint')))
        expect([operation, answer.status]).toEqual([operation, 403]);
      else if (answer.status !== 200 && answer.status !== 202) expect([operation, answer.status]).toEqual([operation, 404]);
      // a list, a job or a report of tenant B's: nothing of A's in it
      else expect([operation, text.includes(A)]).toEqual([operation, false]);
    }
    // the same requests with A's key found what B's did not
    expect((await api.call('GET', `/v1/deliveries/${idPath(waiting)}`, KEYS.a)).json.state).toBe('waiting');
    const endpoint = new URL(env.receiver.url).host;
    expect((await api.call('GET', '/v1/endpoints', KEYS.a)).json.endpoints.map((e: { endpoint: string }) => e.endpoint)).toContain(
      endpoint,
    );
    expect((await api.call('GET', `/v1/subscriptions/${sub}`, KEYS.a)).json.tenant).toBe(A);
    expect((await api.call('POST', `/v1/subscriptions/${sub}/stop`, KEYS.a, { reason: 'done' })).json.outcome).toBe('stopped');
    await api.call('POST', `/v1/deliveries/${idPath(waiting)}/cancel`, KEYS.a);
  });
});

describe("secrets are bound to tenants: B's key naming A's secret is refused at submit, naming the field", () => {
  // the API server sees the worker's secrets (here this process's environment), with their tenants
  const variables = () => ({
    REDELIVER_SIGNING_SECRETS_A_HOOKS: JSON.stringify({
      secrets: [`whsec_${Buffer.alloc(32, 9).toString('base64')}`],
      endpoints: [env.receiver.url],
      tenants: [A],
    }),
    REDELIVER_MQTT_CREDENTIALS_HUB_A: JSON.stringify({ username: 'a', password: 'hunter2', brokers: ['mqtt://127.0.0.1:1'], tenants: [A] }),
  });
  beforeAll(() => Object.assign(process.env, variables()));
  afterAll(() => Object.keys(variables()).forEach((v) => delete process.env[v]));

  test('a delivery (alone or in a bulk submit) naming the signing secret, or the MQTT credential: 400, the field named, nothing started', async () => {
    const signed = event({ tenant: B, target: { url: `${env.receiver.url}/in`, signing: 'a-hooks' } });
    const alone = await api.call('POST', '/v1/deliveries', KEYS.b, signed);
    expect(alone).toMatchObject({ status: 400, json: { problems: [{ field: 'target.signing' }] } });
    const bulk = await api.call('POST', '/v1/deliveries', KEYS.b, [event({ tenant: B }), signed]);
    expect(bulk).toMatchObject({ status: 400, json: { problems: [{ field: '[1].target.signing' }] } });
    const published = event({ tenant: B, target: { url: 'mqtt://127.0.0.1:1', credential: 'hub-a' } });
    expect(await api.call('POST', '/v1/deliveries', KEYS.b, published)).toMatchObject({
      status: 400,
      json: { problems: [{ field: 'target.credential' }] },
    });
    expect(JSON.stringify([alone.json, bulk.json])).not.toContain('hunter2');
    expect(env.receiver.of(signed.messageId!)).toHaveLength(0);
    // A's own key may use them
    expect((await api.call('POST', '/v1/deliveries', KEYS.a, { ...signed, tenant: A })).status).toBe(202);
  });

  test('a command subscription naming the credential: 400 naming broker.credential', async () => {
    const subscription = {
      tenant: B,
      device: 'd1',
      broker: { url: 'mqtt://127.0.0.1:1', credential: 'hub-a' },
      callback: `${env.receiver.url}/c`,
    };
    const answer = await api.call('POST', '/v1/subscriptions', KEYS.b, subscription);
    expect(answer).toMatchObject({ status: 400, json: { problems: [{ field: 'broker.credential' }] } });
  });
});

test('the access log names each request and its key, never a body or a key', async () => {
  const secret = `secret-payload-${randomUUID()}`;
  await api.call('POST', '/v1/deliveries', KEYS.a, event({ payload: secret }));
  const lines = api.log.map((e) => JSON.stringify(e)).join('\n');
  expect(api.log.some((e) => e.method === 'POST' && e.url === '/v1/deliveries' && e.key === 'tenant-a' && e.status === 202)).toBe(true);
  expect(lines).not.toContain(secret);
  for (const key of Object.values(KEYS)) expect(lines).not.toContain(key);
});
