import { validateDelivery } from '../../src/validation/delivery';
import { InvalidInputError } from '../../src/errors';
import { validateSubscription } from '../../src/validation/subscription';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const ok = {
  kind: 'event',
  tenant: 'acme',
  device: 'sensor-1',
  messageId: 'm-1',
  target: 'https://ingest.example.com/events',
  payload: { t: 1 },
};

function problems(input: unknown, options = {}): Record<string, string> {
  try {
    validateDelivery(input, { now: NOW, ...options });
  } catch (err) {
    if (err instanceof InvalidInputError) return Object.fromEntries(err.problems.map((p) => [p.field, p.message]));
    throw err;
  }
  throw new Error('expected the input to be refused');
}

test('a valid delivery gets every default filled in', () => {
  const d = validateDelivery(ok, { now: NOW });
  expect(d).toMatchObject({
    deliveryId: 'delivery/acme/sensor-1/m-1',
    qos: 1,
    endpoint: 'ingest.example.com',
    target: { url: 'https://ingest.example.com/events', method: 'POST', timeout: 10_000 },
    body: '{"t":1}',
    contentType: 'application/json',
    policy: {
      jitter: 'full',
      initial: 200,
      min: 200,
      max: 300_000,
      multiplier: 2,
      maxAttempts: 0,
      maxAge: 7 * 24 * 3600_000,
      deadline: null,
    },
    submittedAt: NOW,
  });
});

test('a message id is generated when none is given', () => {
  const { messageId: _, ...rest } = ok;
  expect(validateDelivery(rest, { now: NOW }).messageId).toMatch(/^[0-9a-f-]{36}$/);
});

test('per-kind defaults: telemetry QoS 1 1 h, QoS 0 one attempt, command response 5 min or its deadline', () => {
  expect(validateDelivery({ ...ok, kind: 'telemetry' }, { now: NOW }).policy).toMatchObject({ maxAge: 3600_000, maxAttempts: 0 });
  expect(validateDelivery({ ...ok, kind: 'telemetry', qos: 0 }, { now: NOW }).policy).toMatchObject({ maxAttempts: 1 });
  const cmd = { ...ok, kind: 'command-response', command: { requestId: 'r-1' } };
  expect(validateDelivery(cmd, { now: NOW }).policy).toMatchObject({ maxAge: 300_000, deadline: null });
  const deadline = '2026-11-21T12:30:00Z';
  expect(validateDelivery({ ...cmd, command: { requestId: 'r-1', deadline } }, { now: NOW }).policy).toMatchObject({
    maxAge: null,
    deadline: Date.parse(deadline),
  });
});

test('URL placeholders are filled from the delivery', () => {
  const d = validateDelivery(
    {
      ...ok,
      kind: 'command-response',
      target: 'http://hono:8080/command/res/{tenant}/{device}/{requestId}?hono-cmd-status={status}',
      command: { requestId: 'r:1', status: 404 },
    },
    { now: NOW },
  );
  expect(d.target.url).toBe('http://hono:8080/command/res/acme/sensor-1/r%3A1?hono-cmd-status=404');
  expect(d.command).toEqual({ requestId: 'r:1', status: 404 });
});

test.each([
  [
    'tenant and device',
    'https://in.example.com/ingest/{tenant}/{device}',
    { tenant: '..', device: '..' },
    '"{tenant}" into "..", and "{device}"',
  ],
  ['a device', 'https://in.example.com/ingest/{tenant}/{device}/data', { device: '.' }, '"{device}"'],
  [
    'a request id',
    'https://in.example.com/command/res/{requestId}',
    { kind: 'command-response', command: { requestId: '..' } },
    '"{requestId}"',
  ],
  ['two placeholders in one segment', 'https://in.example.com/in/{tenant}{device}', { tenant: '.', device: '.' }, '"{tenant}{device}"'],
  ['a placeholder after an encoded dot', 'https://in.example.com/in/%2E{device}', { device: '.' }, '"%2E{device}"'],
])('a URL placeholder that makes a dot segment is refused (%s): the request would leave its path', (_what, url, over, segment) => {
  const found = problems({ ...ok, ...over, target: { url } });
  expect(found['target.url']).toContain(`turns the path segment ${segment} into `);
  expect(found['target.url']).toMatch(/: a dot segment would send the request outside the URL's path$/);
});

test('dots elsewhere in a URL stay as they are: within a segment, in the query, in a topic', () => {
  const d = validateDelivery(
    { ...ok, tenant: '..', device: 'a.b', target: 'https://in.example.com/in/x{tenant}/{device}?t={tenant}' },
    { now: NOW },
  );
  expect(d.target.url).toBe('https://in.example.com/in/x../a.b?t=..');
  const mqtt = validateDelivery({ ...ok, tenant: '..', target: 'mqtt://broker.example.com:1883' }, { now: NOW });
  expect(mqtt.target).toMatchObject({ topic: 'event/../sensor-1' });
});

test('the tenant "redeliver" is reserved for its operational events: a producer naming it is refused', () => {
  expect(problems({ ...ok, tenant: 'redeliver' })).toEqual({
    tenant: expect.stringMatching(/must not be "redeliver": .*operational events/),
  });
  expect(validateDelivery({ ...ok, tenant: 'redeliver' }, { now: NOW, operationalEvent: true }).tenant).toBe('redeliver');
});

test.each([
  ['unknown kind', { ...ok, kind: 'parcel' }, 'kind', /telemetry, event, command-response/],
  ['QoS other than 0/1', { ...ok, kind: 'telemetry', qos: 2 }, 'qos', /0 or 1/],
  ['QoS on an event', { ...ok, qos: 0 }, 'qos', /telemetry only/],
  ['a target that is not http(s)', { ...ok, target: 'ftp://example.com/x' }, 'target', /scheme "ftp"/],
  ['a target that is no URL', { ...ok, target: 'not a url' }, 'target', /not a valid URL/],
  ['a missing tenant', { ...ok, tenant: undefined }, 'tenant', /required/],
  ['a device with a slash', { ...ok, device: 'a/b' }, 'device', /"\/"/],
  ['an empty message id', { ...ok, messageId: '' }, 'messageId', /empty/],
  ['a missing payload', { ...ok, payload: undefined }, 'payload', /required/],
  ['an unknown field', { ...ok, colour: 'red' }, 'colour', /not a known field/],
  ['a negative timeout', { ...ok, target: { url: ok.target, timeout: -5 } }, 'target.timeout', /above 0/],
  ['a negative policy duration', { ...ok, policy: { min: '-5s' } }, 'policy.min', /-5s/],
  ['inverted min/max', { ...ok, policy: { min: '10s', max: '1s' } }, 'policy.min', /must not exceed max/],
  [
    'a deadline in the past',
    { ...ok, kind: 'command-response', command: { requestId: 'r', deadline: '2026-11-21T11:00:00Z' } },
    'command.deadline',
    /in the past/,
  ],
  ['a command response without its command', { ...ok, kind: 'command-response' }, 'command', /required/],
  ['QoS 0 with retries', { ...ok, kind: 'telemetry', qos: 0, policy: { maxAttempts: 5 } }, 'policy.maxAttempts', /exactly once/],
  ['an override with an unknown code', { ...ok, overrides: { 'http-4xx': 'success' } }, 'overrides.http-4xx', /stable codes/],
  ['an override to an unknown class', { ...ok, overrides: { 'http-409': 'fine' } }, 'overrides.http-409', /success, client/],
])('refuses %s, naming the field', (_what, input, field, message) => {
  const found = problems(input);
  expect(Object.keys(found)).toContain(field);
  expect(found[field]).toMatch(message);
});

test('a payload over the size limit is refused with its size', () => {
  const found = problems({ ...ok, payload: 'x'.repeat(2048) }, { maxPayloadBytes: 1024 });
  expect(found.payload).toBe('is 2048 bytes, over the limit of 1024 bytes');
});

test('every problem is reported at once', () => {
  const found = problems({ kind: 'parcel', tenant: '', device: 'd 1', target: 1, payload: 1 });
  expect(Object.keys(found).sort()).toEqual(['device', 'kind', 'target', 'tenant']);
});

test('well-formed fields are checked even when others are malformed', () => {
  const found = problems({
    kind: 'parcel',
    qos: 2,
    tenant: 'acme',
    device: 'd',
    target: 'ftp://x',
    payload: 1,
    policy: { min: '10s', max: '1s' },
  });
  expect(Object.keys(found).sort()).toEqual(['kind', 'policy.min', 'qos', 'target']);
});

test('input that is not an object is refused', () => {
  expect(problems(null)).toEqual({ '(delivery)': 'must be an object' });
  expect(problems('event')).toEqual({ '(delivery)': 'must be an object' });
});

// Issue 15, findings 9–12: whatever submit accepts, the first attempt can send; the rest is refused here, naming the field.
describe('headers (target.headers)', () => {
  const withHeaders = (headers: Record<string, string>) => ({ ...ok, target: { url: ok.target, headers } });

  test('ordinary headers are kept as given', () => {
    const headers = { Authorization: 'Bearer abc', 'X-Trace': 'a\tb', 'x-empty': '' };
    expect(validateDelivery(withHeaders(headers), { now: NOW }).target).toMatchObject({ headers });
  });

  test.each([
    ['a CR/LF in the name', 'X-A\r\nX-Injected', 'x', /valid header name/],
    ['a space in the name', 'X A', 'x', /valid header name/],
    ['a colon in the name', ':authority', 'x', /valid header name/],
    ['a non-ASCII name', 'X-Grüße', 'x', /valid header name/],
    ['a CR/LF in the value', 'X-A', 'ok\r\nX-Injected: 1', /CR, LF or other control characters/],
    ['a NUL in the value', 'X-A', 'a\u0000b', /control characters/],
    ['a DEL in the value', 'X-A', 'a\u007fb', /control characters/],
    ['a non-ASCII value', 'X-A', 'grüße ✓', /ASCII/],
  ])('refuses %s', (_what, name, value, message) => {
    const found = problems(withHeaders({ [name]: value }));
    const field = Object.keys(found).find((f) => f.startsWith('target.headers'));
    expect(field).toBeDefined();
    expect(found[field!]).toMatch(message);
    expect(field).not.toMatch(/[\r\n]/);
  });

  test.each([
    'Transfer-Encoding',
    'content-length',
    'EXPECT',
    'Connection',
    'Host',
    'Keep-Alive',
    'Proxy-Connection',
    'TE',
    'Trailer',
    'Upgrade',
    'Proxy-Authorization',
  ])('refuses the framing or hop-by-hop header %s', (name) => {
    expect(problems(withHeaders({ [name]: 'x' }))[`target.headers.${name}`]).toMatch(/hop-by-hop|framing|from the target URL/);
  });

  const owned = ['Message-Id', 'delivery-attempt', 'QoS-Level', 'Webhook-Id', 'webhook-timestamp', 'WEBHOOK-SIGNATURE'];
  test.each(owned)('refuses %s, a header redeliver owns', (name) => {
    expect(problems(withHeaders({ [name]: '1' }))[`target.headers.${name}`]).toMatch(/redeliver|Standard Webhooks/);
  });

  test('Content-Type goes in contentType, once', () => {
    expect(problems(withHeaders({ 'Content-Type': 'text/csv' }))['target.headers.Content-Type']).toMatch(/contentType/);
    expect(validateDelivery({ ...ok, contentType: 'text/csv; charset=utf-8' }, { now: NOW }).contentType).toBe('text/csv; charset=utf-8');
    expect(problems({ ...ok, contentType: 'text/csv\r\nX-Injected: 1' }).contentType).toMatch(/control characters/);
  });

  test('a name given twice in different cases is refused', () => {
    expect(problems(withHeaders({ 'X-A': '1', 'x-a': '2' }))['target.headers.x-a']).toMatch(/more than once/);
  });
});

describe('ids: tenant, device, message id, request id', () => {
  const cmd = (requestId: string) => ({ ...ok, kind: 'command-response', command: { requestId } });
  test.each([
    ['a NUL in the tenant', { ...ok, tenant: 'ac\u0000me' }, 'tenant'],
    ['a control character in the device', { ...ok, device: 'sensor\u0007' }, 'device'],
    ['a DEL in the message id', { ...ok, messageId: 'm\u007f1' }, 'messageId'],
    ['a non-ASCII message id (sent as a header)', { ...ok, messageId: 'msg-é' }, 'messageId'],
    ['an emoji device', { ...ok, device: 'sensor-🔥' }, 'device'],
    ['a CR/LF in the request id', cmd('r\r\n1'), 'command.requestId'],
  ])('refuses %s', (_what, input, field) => {
    expect(problems(input)[field]).toMatch(/whitespace|printable ASCII/);
  });

  test('ids are at most 128 characters, message ids 160 (room for a response-<requestId>)', () => {
    const long = (n: number) => 'x'.repeat(n);
    const longest = validateDelivery({ ...cmd(long(128)), tenant: long(128), device: long(128), messageId: long(160) }, { now: NOW });
    expect(longest.deliveryId).toHaveLength(9 + 128 + 1 + 128 + 1 + 160);
    const found = problems({ ...cmd(long(129)), tenant: long(129), device: long(129), messageId: long(161) });
    expect(found).toMatchObject({
      tenant: 'must be at most 128 characters',
      device: 'must be at most 128 characters',
      'command.requestId': 'must be at most 128 characters',
      messageId: 'must be at most 160 characters',
    });
  });
});

describe('size bounds', () => {
  test('a 1.5 MB header with a 250 KB payload is refused, naming the headers', () => {
    const found = problems({
      ...ok,
      payload: 'x'.repeat(250_000),
      target: { url: ok.target, headers: { 'X-Big': 'y'.repeat(1_500_000) } },
    });
    expect(found['target.headers']).toMatch(/^are 1500007 bytes, over the limit of 8192 bytes$/);
  });

  test('more than 64 headers are refused', () => {
    const headers = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`x-h${i}`, '1']));
    expect(problems({ ...ok, target: { url: ok.target, headers } })['target.headers']).toBe('has 65 headers, over the limit of 64');
  });

  test('a 3 MB URL is refused at once, without being quoted back', () => {
    const url = `https://ingest.example.com/${'p'.repeat(3 * 1024 * 1024)}`;
    const started = performance.now();
    const found = problems({ ...ok, target: url });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(found.target).toBe(`is ${url.length} bytes, over the limit of 8192 bytes`);
    expect(problems({ ...ok, target: { url } })['target.url']).toMatch(/over the limit of 8192 bytes/);
  });

  test('the whole delivery as stored is bounded, not the payload alone', () => {
    // each quote of a JSON body is two bytes in the workflow's input, each control character six
    const found = problems({ ...ok, payload: '\u0001'.repeat(200_000) });
    expect(found['(delivery)']).toMatch(/^is 12\d{5} bytes as stored, over the limit of 393216 bytes \(payload 12\d{5},/);
    const lowered = problems({ ...ok, payload: 'x'.repeat(20_000) }, { maxDeliveryBytes: 10_000 });
    expect(lowered['(delivery)']).toMatch(/over the limit of 10000 bytes/);
  });

  test('a JSON payload at the payload limit still fits the whole bound', () => {
    const row = JSON.stringify({ device: 'sensor-1', temperature: 21.5, humidity: 40, at: '2026-11-21T12:00:00Z' });
    const rows = Array.from({ length: Math.floor((256 * 1024 - 2) / (row.length + 1)) }, () => JSON.parse(row) as unknown);
    const d = validateDelivery({ ...ok, payload: rows }, { now: NOW });
    expect(Buffer.byteLength(d.body)).toBeGreaterThan(255 * 1024);
  });

  test('a CA certificate beyond 32 KiB is refused', () => {
    const ca = `-----BEGIN CERTIFICATE-----\n${'A'.repeat(40_000)}\n-----END CERTIFICATE-----\n`;
    const found = problems({ ...ok, target: { url: 'mqtts://broker.example.com:8883', tls: { ca } } });
    expect(found['target.tls.ca']).toMatch(/over the limit of 32768 bytes/);
  });
});

describe('URLs and deadlines', () => {
  test.each([
    ['an empty host', 'http:///path', /must name a host/],
    ['an empty host (https)', 'https:///x/y', /must name a host/],
    ['a scheme without //', 'http:example.com/x', /must name a host/],
    ['user info', 'http://user:pw@ingest.example.com/', /user name or password/],
    ['empty user info', 'http://@ingest.example.com/', /user name or password/],
    ['port 0', 'http://ingest.example.com:0/', /port 0/],
    ['a newline (which a URL parser drops silently)', 'http://ingest.example.com/a\nb', /control characters/],
    ['a tab in the host', 'http://ingest.exa\tmple.com/', /control characters/],
  ])('refuses %s', (_what, target, message) => {
    const found = problems({ ...ok, target });
    expect(found.target).toMatch(message);
    expect(JSON.stringify(found)).not.toContain('pw@');
  });

  test.each([
    ['command.deadline', { kind: 'command-response', command: { requestId: 'r', deadline: 8.64e15 + 1 } }],
    ['command.deadline', { kind: 'command-response', command: { requestId: 'r', deadline: 1e300 } }],
    ['policy.deadline', { policy: { deadline: 8.64e15 + 1 } }],
    ['policy.deadline', { policy: { deadline: '+300000-01-01T00:00:00Z' } }],
  ])('a deadline past what a date can hold is a field error (%s)', (field, input) => {
    expect(problems({ ...ok, ...input })[field]).toMatch(/date/);
  });
});

describe('payloads', () => {
  test.each([
    ['a BigInt', { n: 10n }, /JSON/],
    ['a function', () => 1, /JSON/],
    ['a symbol', Symbol('x'), /JSON/],
  ])('refuses %s, naming the payload', (_what, payload, message) => {
    expect(problems({ ...ok, payload }).payload).toMatch(message);
  });

  test('refuses a payload that refers to itself', () => {
    const payload: Record<string, unknown> = {};
    payload.self = payload;
    expect(problems({ ...ok, payload }).payload).toMatch(/JSON/);
  });
});

describe('command subscriptions follow the same rules', () => {
  const sub = {
    tenant: 'acme',
    device: 'sensor-1',
    broker: 'mqtt://broker.example.com:1883',
    callback: 'https://app.example.com/commands',
  };
  const withCallbackHeaders = (headers: Record<string, string>) => ({ ...sub, callback: { url: sub.callback, headers } });
  const subProblems = (input: unknown): Record<string, string> => {
    try {
      validateSubscription(input, { now: NOW });
    } catch (err) {
      if (err instanceof InvalidInputError) return Object.fromEntries(err.problems.map((p) => [p.field, p.message]));
      throw err;
    }
    throw new Error('expected the subscription to be refused');
  };

  test.each([
    ['a control character in the tenant', { ...sub, tenant: 'ac\u0001me' }, 'tenant', /printable ASCII/],
    ['the reserved tenant', { ...sub, tenant: 'redeliver' }, 'tenant', /must not be "redeliver"/],
    ['a 129-character device', { ...sub, device: 'd'.repeat(129) }, 'device', /at most 128/],
    [
      'a control character in the client id',
      { ...sub, broker: { url: sub.broker, clientId: 'c\u0000' } },
      'broker.clientId',
      /printable ASCII/,
    ],
    ['a long client id', { ...sub, broker: { url: sub.broker, clientId: `acme/${'c'.repeat(252)}` } }, 'broker.clientId', /at most 256/],
    ['a "+" in the client id', { ...sub, broker: { url: sub.broker, clientId: 'acme/c+1' } }, 'broker.clientId', /"\+"/],
    ['a callback without a host', { ...sub, callback: 'http:///commands' }, 'callback', /must name a host/],
    ['user info in the callback', { ...sub, callback: 'https://u:secret@app.example.com/' }, 'callback', /user name or password/],
    [
      'a hop-by-hop callback header',
      withCallbackHeaders({ 'Transfer-Encoding': 'chunked' }),
      'callback.headers.Transfer-Encoding',
      /hop-by-hop/,
    ],
    ['a callback header redeliver sets', withCallbackHeaders({ Tenant: 'other' }), 'callback.headers.Tenant', /redeliver/],
    ['a CR/LF in a callback header', withCallbackHeaders({ 'X-A': 'a\r\nb' }), 'callback.headers.X-A', /control characters/],
    ['a response target with an empty host', { ...sub, response: { target: 'http:///res' } }, 'response.target', /must name a host/],
  ])('refuses %s', (_what, input, field, message) => {
    const found = subProblems(input);
    expect(found[field]).toMatch(message);
    expect(JSON.stringify(found)).not.toContain('secret');
  });
});

describe('target.batch: an endpoint that takes many messages in one request', () => {
  const url = 'https://ingest.example.com/batch';
  const target = (t: unknown) => ({ ...ok, target: t });
  test('defaults are filled in; a target without it keeps the shape (and fingerprint) it had before', () => {
    expect(validateDelivery(target({ url, batch: { format: 'ndjson' } }), { now: NOW }).target).toEqual({
      url,
      method: 'POST',
      headers: {},
      timeout: 10_000,
      batch: { format: 'ndjson', maxMessages: 100, maxBytes: 256 * 1024 },
    });
    // as recorded before batching: a resubmission is compared by a fingerprint of the delivery as stored
    expect(Object.keys(validateDelivery(target({ url }), { now: NOW }).target)).toEqual(['url', 'method', 'headers', 'timeout']);
  });

  test('every wrong field is named', () => {
    expect(problems(target({ url, batch: { format: 'xml', maxMessages: 1, maxBytes: 1.5 } }))).toEqual({
      'target.batch.format': 'must be "json" (a JSON array) or "ndjson" (one message per line)',
      'target.batch.maxMessages': 'must be at least 2 (leave batch out to send one message per request)',
      'target.batch.maxBytes': 'must be a whole number of bytes from 1024 to 4194304',
    });
    expect(problems(target({ url, batch: { maxMessages: 1001, maxBytes: 5 * 1024 * 1024, linger: 5 } }))).toEqual({
      'target.batch.format': 'is required',
      'target.batch.maxMessages': 'must be at most 1000',
      'target.batch.maxBytes': 'must be at most 4194304',
      'target.batch.linger': 'is not a known field',
    });
    expect(problems(target({ url, batch: 'json' }))).toEqual({
      'target.batch': 'must be an object { format, maxMessages?, maxBytes? }',
    });
    expect(problems(target({ url, batch: { format: 'json', maxMessages: '10' } }))).toEqual({
      'target.batch.maxMessages': 'must be a whole number of messages from 2 to 1000',
    });
  });

  test('an MQTT target cannot opt in', () => {
    expect(problems(target({ url: 'mqtt://broker.example.com:1883', batch: { format: 'json' } }))).toEqual({
      'target.batch': 'applies to http:// and https:// targets only',
    });
  });
});
