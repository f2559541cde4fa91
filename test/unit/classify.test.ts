import { FAILURE_TYPES, STABLE_CODE, classify, type TransportOutcome, type Verdict } from '../../src/classify';

const http = (status: number, headers: Record<string, string> = {}): TransportOutcome => ({ kind: 'http', status, headers });
const puback = (reasonCode: number): TransportOutcome => ({ kind: 'mqtt5', packet: 'puback', reasonCode });
const net = (code: string): TransportOutcome => ({ kind: 'network', code });

// docs/spec.md §4, example by example: these hold whatever the table says
describe('docs/spec.md §4 examples', () => {
  const examples: [Verdict, string, TransportOutcome][] = [
    ...[400, 401, 403, 404, 405, 410, 413, 414, 415, 422].map((s): [Verdict, string, TransportOutcome] => ['client', `HTTP ${s}`, http(s)]),
    ['client', 'PUBACK 0x87 not authorized', puback(0x87)],
    ['client', 'PUBACK 0x90 topic name invalid', puback(0x90)],
    ['client', 'PUBACK 0x99 payload format invalid', puback(0x99)],
    ['client', 'an invalid URL', { kind: 'invalid-target', message: 'Invalid URL' }],
    ['well-known', 'HTTP 429', http(429)],
    ['well-known', 'HTTP 429 with Retry-After', http(429, { 'retry-after': '30' })],
    ['well-known', 'HTTP 503 with Retry-After', http(503, { 'retry-after': '2' })],
    ['well-known', 'PUBACK 0x97 quota exceeded', puback(0x97)],
    ['server', 'HTTP 500', http(500)],
    ['server', 'HTTP 502', http(502)],
    ['server', 'HTTP 503 without hint', http(503)],
    ['server', 'HTTP 504', http(504)],
    ['server', 'PUBACK 0x80 unspecified error', puback(0x80)],
    ['server', 'PUBACK 0x83 implementation specific', puback(0x83)],
    ...['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'].map(
      (c): [Verdict, string, TransportOutcome] => ['connection', c, net(c)],
    ),
    ['connection', 'attempt timeout', { kind: 'timeout', afterMs: 10_000 }],
    ['connection', 'MQTT disconnect', { kind: 'mqtt5', packet: 'disconnect', reasonCode: 0x8b }],
    ['connection', 'MQTT connection closed', { kind: 'mqtt-closed' }],
    ['success', 'HTTP 200', http(200)],
    ['success', 'HTTP 202 (Hono)', http(202)],
    ['success', 'HTTP 204', http(204)],
    ['success', 'PUBACK 0x00', puback(0x00)],
    ['success', 'PUBACK 0x10 no matching subscribers', puback(0x10)],
  ];
  test.each(examples.map(([cls, label, outcome]) => [label, cls, outcome] as const))('%s → %s', (_, cls, outcome) => {
    const c = classify(outcome);
    expect(c.class).toBe(cls);
    expect(c.retryable).toBe(cls !== 'client' && cls !== 'success');
    expect(c.code).toMatch(STABLE_CODE);
  });

  test('unknown codes fall into their family, and the reason says so', () => {
    expect(classify(http(418))).toMatchObject({ class: 'client', code: 'http-418', retryable: false });
    expect(classify(http(418)).reason).toMatch(/^HTTP 418: .*without a row of its own, taken as a client error/);
    expect(classify(http(599))).toMatchObject({ class: 'server', code: 'http-599', retryable: true });
    expect(classify(http(599)).reason).toMatch(/^HTTP 599: .*taken as a server error/);
    expect(classify(net('ECONNABORTED'))).toMatchObject({ class: 'connection', code: 'net-ECONNABORTED' });
    expect(classify(puback(0xfe))).toMatchObject({ class: 'server', code: 'mqtt-0xfe' });
  });
});

describe('Eclipse Hono conventions', () => {
  test("the HTTP adapter's 503 with Retry-After: 2 (no consumer) waits 2 s", () => {
    expect(classify(http(503, { 'retry-after': '2' }))).toMatchObject({ class: 'well-known', retryAfterMs: 2_000 });
  });

  test('a 429 for an exhausted message limit comes without a hint: backoff decides', () => {
    const c = classify(http(429));
    expect(c).toMatchObject({ class: 'well-known', retryable: true });
    expect(c).not.toHaveProperty('retryAfterMs');
  });

  test("the MQTT adapter's error topic carries HTTP statuses, classified as such", () => {
    const c = classify({ kind: 'mqtt-error-topic', status: 413, message: 'payload too large' });
    expect(c).toMatchObject({ class: 'client', code: 'http-413', retryable: false });
    expect(c.reason).toMatch(/^Hono's MQTT adapter reported on the error topic: HTTP 413 /);
    expect(c.reason).toContain('the endpoint said: payload too large');
    expect(classify({ kind: 'mqtt-error-topic', status: 503 })).toMatchObject({ class: 'server', code: 'http-503' });
  });

  test('CONNACK refusals: full adapter and tenant quota are waited out, bad credentials are not', () => {
    expect(classify({ kind: 'mqtt5', packet: 'connack', reasonCode: 0x9c, serverReference: 'mqtt-2.example' })).toMatchObject({
      class: 'well-known',
      code: 'mqtt-0x9c',
    });
    expect(classify({ kind: 'mqtt5', packet: 'connack', reasonCode: 0x97 }).class).toBe('well-known');
    expect(classify({ kind: 'mqtt5', packet: 'connack', reasonCode: 0x86 }).class).toBe('client');
    expect(classify({ kind: 'mqtt3-connack', returnCode: 0x03 })).toMatchObject({ class: 'server', code: 'mqtt3-connack-0x03' });
    expect(classify({ kind: 'mqtt3-connack', returnCode: 0x05 }).class).toBe('well-known');
    expect(classify({ kind: 'mqtt3-connack', returnCode: 0x04 }).class).toBe('client');
  });

  test('a withheld PUBACK (on-error=skip-ack) and a closed connection mean reconnect and resend', () => {
    const silent = classify({ kind: 'mqtt-no-puback', afterMs: 5_000 });
    expect(silent).toMatchObject({ class: 'connection', code: 'mqtt-no-puback', retryable: true });
    expect(silent.reason).toContain('5000 ms');
    expect(classify({ kind: 'mqtt-closed' })).toMatchObject({ class: 'connection', code: 'mqtt-closed' });
  });
});

describe('overrides', () => {
  test('409 → success: the receiver already has the message', () => {
    const c = classify(http(409), { 'http-409': 'success' });
    expect(c).toMatchObject({ class: 'success', retryable: false, code: 'http-409' });
    expect(c.reason).toMatch(/\(treated as success by this delivery's overrides\)$/);
  });

  test('a retryable code made client loses its hint', () => {
    const c = classify(http(503, { 'retry-after': '2' }), { 'http-503': 'client' });
    expect(c).toMatchObject({ class: 'client', retryable: false });
    expect(c).not.toHaveProperty('retryAfterMs');
  });

  test('a family member can be overridden by its own code', () => {
    expect(classify(http(418), { 'http-418': 'server' })).toMatchObject({ class: 'server', retryable: true });
    expect(classify(net('ENOTFOUND'), { 'net-ENOTFOUND': 'client' })).toMatchObject({ class: 'client', retryable: false });
  });

  test('only the named code is affected, and naming its own class changes nothing', () => {
    expect(classify(http(404), { 'http-409': 'success' })).toEqual(classify(http(404)));
    expect(classify(http(500), { 'http-500': 'server' })).toEqual(classify(http(500)));
  });
});

describe('reasons', () => {
  test("quote the server's own words, on one bounded line", () => {
    const c = classify({ kind: 'http', status: 400, detail: `qos-level\n  header   invalid ${'x'.repeat(400)}` });
    const quoted = /\(the endpoint said: (.*)\)$/.exec(c.reason)?.[1];
    expect(quoted).toMatch(/^qos-level header invalid x+…$/);
    expect(quoted!.length).toBe(200);
    expect(c.reason).not.toContain('\n');
  });

  test('carry MQTT 5 reason strings and server references', () => {
    const c = classify({ kind: 'mqtt5', packet: 'disconnect', reasonCode: 0x9d, reasonString: 'moved', serverReference: 'broker-2:8883' });
    expect(c.reason).toBe(
      'MQTT DISCONNECT 0x9d Server moved: the broker has moved; retried with backoff until the target is updated (reason string: moved; server reference: broker-2:8883)',
    );
  });
});

test('one stable, distinct Temporal failure type per class', () => {
  expect(FAILURE_TYPES).toEqual({
    client: 'DeliveryRejected',
    'well-known': 'DeliveryThrottled',
    server: 'DeliveryServerError',
    connection: 'DeliveryNoResponse',
  });
});

test('STABLE_CODE refuses what classify never returns', () => {
  for (const code of ['http-4xx', 'http-50', 'mqtt-0x9C', 'mqtt-151', 'net-*', 'tls-', 'Timeout', 'http-409 '])
    expect(code).not.toMatch(STABLE_CODE);
});
