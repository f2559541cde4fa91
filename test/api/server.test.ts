import { randomUUID } from 'node:crypto';
import { get } from 'node:https';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Redeliver } from '../../src/client';
import { callApi, startApi, type TestApi } from '../support/api';
import { freePort } from '../support/ports';
import { testAddress } from '../support/temporal';
import { SELF_SIGNED_CERT } from '../support/fault-server';

// What the server does around the routes: rate limit, body limit, Temporal away, TLS. No worker is needed.
const KEY = `key-${randomUUID()}`;
const OTHER = `other-${randomUUID()}`;
const keys = [
  { key: KEY, tenants: ['acme'], roles: ['produce', 'read'], rateLimit: '3/min' },
  { key: OTHER, tenants: ['acme'], roles: ['produce', 'read'] },
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
  connection = await Connection.connect({ address: testAddress() });
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
  const dir = path.join(__dirname, '../fixtures/tls');
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
