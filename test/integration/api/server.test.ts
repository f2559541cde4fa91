import { randomUUID } from 'node:crypto';
import { get } from 'node:https';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver } from '../../../src/client/index';
import { callApi, startApi, type TestApi } from '../../support/api';
import { freePort } from '../../support/ports';
import { testAddress } from '../../support/temporal';
import { SELF_SIGNED_CERT } from '../../support/fault-server';
import { waitFor } from '../../support/wait';

// What the server does around the routes: rate limit, body limit, Temporal away, TLS. No worker is needed.
const KEY = `key-${randomUUID()}`;
const OTHER = `other-${randomUUID()}`;
const EVERY = `every-${randomUUID()}`;
const keys = [
  { key: KEY, tenants: ['acme'], roles: ['produce', 'read'], rateLimit: '3/min' },
  { key: OTHER, tenants: ['acme'], roles: ['produce', 'read'] },
  { key: EVERY, tenants: ['*'], roles: ['produce', 'operate', 'read'] },
];
let connection: Connection;
let redeliver: Redeliver;
const servers: TestApi[] = [];
const start = async (env: Record<string, string> = {}, on = redeliver) => {
  const api = await startApi(on, keys, env);
  servers.push(api);
  return api;
};

beforeAll(async () => {
  connection = await connectClient({ address: testAddress() });
  redeliver = new Redeliver(new Client({ connection }), { taskQueue: `api-server-${randomUUID()}` });
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await connection?.close();
});

test("a key over its rate limit gets 429 with Retry-After; another key's requests still pass", async () => {
  const api = await start({ REDELIVER_API_RATE_LIMIT: '100/s' });
  for (let i = 0; i < 3; i++) expect((await api.call('GET', '/v1/deliveries?limit=1', KEY)).status).toBe(200);
  const over = await api.call('GET', '/v1/deliveries?limit=1', KEY);
  expect(over.status).toBe(429);
  expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);
  expect(over.json).toMatchObject({ status: 429, title: 'Too Many Requests' });
  expect((await api.call('GET', '/v1/deliveries?limit=1', OTHER)).status).toBe(200);
});

test('a body over the limit is refused with 413, before it is read whole', async () => {
  const api = await start({ REDELIVER_API_BODY_LIMIT: String(64 * 1024) });
  const payload = 'x'.repeat(100 * 1024);
  const input = { kind: 'event', tenant: 'acme', device: 'd', target: 'https://example.com/in', payload };
  const answer = await api.call('POST', '/v1/deliveries', OTHER, input);
  expect(answer.status).toBe(413);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.json).toMatchObject({ status: 413, title: 'Payload Too Large' });
  const notJson = await callApi(api.url, 'POST', '/v1/deliveries', OTHER, '{"kind": ');
  expect(notJson.status).toBe(400);
});

test('503 with Retry-After while Temporal is unreachable; the document and the server still answer', async () => {
  const away = await Redeliver.connect({ address: `127.0.0.1:${await freePort()}`, lazy: { attempts: 2 } });
  try {
    const api = await start({}, away);
    const input = { kind: 'event', tenant: 'acme', device: 'd', target: 'https://example.com/in', payload: 1 };
    for (const answer of [await api.call('POST', '/v1/deliveries', OTHER, input), await api.call('GET', '/v1/deliveries', OTHER)]) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('5');
      expect(answer.json.detail).toMatch(/Temporal is unreachable/);
    }
    const health = await api.call('GET', '/healthz');
    expect(health).toMatchObject({ status: 503, json: { status: 'unavailable', temporal: 'unreachable' } });
    expect((await api.call('GET', '/openapi.json')).json.openapi).toBe('3.1.0');
    // bad input is still told: it needs no Temporal
    expect((await api.call('POST', '/v1/deliveries', OTHER, { ...input, kind: 'x' })).status).toBe(400);
  } finally {
    await away.close();
  }
});

test('HTTPS from certificate files', async () => {
  const dir = path.join(__dirname, '../../fixtures/tls');
  const api = await start({
    REDELIVER_API_TLS_CERT_FILE: path.join(dir, 'localhost.crt'),
    REDELIVER_API_TLS_KEY_FILE: path.join(dir, 'localhost.key'),
  });
  expect(api.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  const status = await new Promise<number | undefined>((resolve, reject) =>
    get(`${api.url}/healthz`, { ca: SELF_SIGNED_CERT }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).once('error', reject),
  );
  expect(status).toBe(200);
  // plain HTTP to it is not served
  await expect(fetch(`${api.url.replace('https', 'http')}/healthz`)).rejects.toThrow();
});

/** A loopback connection to the server, and what became of it: the bytes it got, whether the server closed it. */
interface Probe {
  socket: Socket;
  received: string;
  closed: boolean;
}
async function openProbe(url: string): Promise<Probe> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const probe: Probe = { socket, received: '', closed: false };
  socket.on('data', (d: Buffer) => (probe.received += d.toString()));
  socket.on('error', () => undefined);
  socket.on('close', () => (probe.closed = true));
  await new Promise((resolve) => socket.once('connect', resolve));
  return probe;
}

test('slow-loris: connections dripping a header line each 100 ms are answered 408 and closed at the request timeout; others are served meanwhile', async () => {
  const api = await start({ REDELIVER_API_REQUEST_TIMEOUT: '1s', REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS: 'off' });
  const probes = await Promise.all(Array.from({ length: 50 }, () => openProbe(api.url)));
  const drips = probes.map((probe) => {
    probe.socket.write('GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    return setInterval(() => probe.closed || probe.socket.write('X-Drip: 1\r\n'), 100);
  });
  try {
    // bounded: the server's 1 s and its once-a-second check, with room for a loaded machine (Node's own default is 60 s+)
    await waitFor(
      async () => probes.filter((p) => p.closed).length,
      (n) => n === probes.length,
      10_000,
      'the server to close every dripping connection',
    );
    // closed by the server while they still sent, and told why
    for (const probe of probes) expect(probe.received).toMatch(/^HTTP\/1\.1 408 Request Timeout/);
    expect((await api.call('GET', '/openapi.json')).status).toBe(200);
  } finally {
    drips.forEach(clearInterval);
    probes.forEach((p) => p.socket.destroy());
  }
});

test('connections past the cap from one address are closed as they open; those within it are served', async () => {
  const api = await start({ REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS: '5' });
  const probes: Probe[] = [];
  for (let i = 0; i < 8; i++) probes.push(await openProbe(api.url));
  try {
    await waitFor(
      async () => probes.filter((p) => p.closed).length,
      (n) => n >= 3,
      10_000,
      'three connections closed',
    );
    expect(probes.map((p) => p.closed)).toEqual([false, false, false, false, false, true, true, true]);
    for (const probe of probes.slice(0, 5))
      probe.socket.write('GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    await waitFor(
      async () => probes.slice(0, 5).filter((p) => p.closed).length,
      (n) => n === 5,
      10_000,
      'the five answered',
    );
    for (const probe of probes.slice(0, 5)) expect(probe.received).toMatch(/^HTTP\/1\.1 200 OK/);
    // once they are gone, the address may connect again
    expect((await api.call('GET', '/openapi.json')).status).toBe(200);
  } finally {
    probes.forEach((p) => p.socket.destroy());
  }
});

test('a body that is not JSON is 415, as docs/http-api.md says, in problem details', async () => {
  const api = await start();
  const plain = await fetch(`${api.url}/v1/deliveries`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OTHER}`, 'content-type': 'text/plain' },
    body: 'kind=event',
  });
  expect(plain.status).toBe(415);
  expect(plain.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(await plain.json()).toMatchObject({ status: 415, detail: 'the body must be application/json, not "text/plain"' });
});

test('a time too far back for a date is 400 naming since, in every listing that takes one', async () => {
  const api = await start();
  for (const path of ['/v1/deliveries', '/v1/dead-letters', '/v1/downtime']) {
    const far = await api.call('GET', `${path}?since=100000000y`, OTHER);
    expect(far.status).toBe(400);
    expect(far.json.problems).toEqual([{ field: 'since', message: expect.stringMatching(/too far back/) }]);
  }
});

test('a path parameter longer than any id is 414 in problem details', async () => {
  const api = await start();
  const long = await api.call('GET', `/v1/deliveries/${encodeURIComponent(`delivery/acme/d/${'m'.repeat(500)}`)}`, OTHER);
  expect(long).toMatchObject({ status: 414, json: { status: 414, detail: expect.stringMatching(/over 427 characters/) } });
  expect(long.headers.get('content-type')).toMatch(/^application\/problem\+json/);
});

test('the tenant "redeliver" (its operational events) is refused in a submit and a subscription, naming tenant', async () => {
  const api = await start();
  const input = { kind: 'event', tenant: 'redeliver', device: 'd', target: 'https://example.com/in', payload: 1 };
  for (const body of [input, [input]]) {
    const answer = await api.call('POST', '/v1/deliveries', EVERY, body);
    expect(answer.status).toBe(400);
    expect(answer.json.problems).toEqual([
      { field: Array.isArray(body) ? '[0].tenant' : 'tenant', message: expect.stringMatching(/must not be "redeliver"/) },
    ]);
  }
  const subscription = { tenant: 'redeliver', device: 'd', broker: 'mqtt://broker.example.com:1883', callback: 'https://example.com/c' };
  const answer = await api.call('POST', '/v1/subscriptions', EVERY, subscription);
  expect(answer.status).toBe(400);
  expect(answer.json.problems).toEqual([{ field: 'tenant', message: expect.stringMatching(/must not be "redeliver"/) }]);
});
