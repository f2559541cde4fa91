import { validateDelivery } from '../../src/delivery/validate';
import { InvalidInputError } from '../../src/errors';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const ok = { kind: 'event', tenant: 'acme', device: 'sensor-1', messageId: 'm-1', target: 'https://ingest.example.com/events', payload: { t: 1 } };

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
    policy: { jitter: 'full', initial: 200, min: 200, max: 300_000, multiplier: 2, maxAttempts: 0, maxAge: 7 * 24 * 3600_000, deadline: null },
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
  expect(validateDelivery({ ...cmd, command: { requestId: 'r-1', deadline } }, { now: NOW }).policy).toMatchObject({ maxAge: null, deadline: Date.parse(deadline) });
});

test('URL placeholders are filled from the delivery', () => {
  const d = validateDelivery({ ...ok, kind: 'command-response', target: 'http://hono:8080/command/res/{tenant}/{device}/{requestId}?hono-cmd-status={status}', command: { requestId: 'r:1', status: 404 } }, { now: NOW });
  expect(d.target.url).toBe('http://hono:8080/command/res/acme/sensor-1/r%3A1?hono-cmd-status=404');
  expect(d.command).toEqual({ requestId: 'r:1', status: 404 });
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
  ['a deadline in the past', { ...ok, kind: 'command-response', command: { requestId: 'r', deadline: '2026-11-21T11:00:00Z' } }, 'command.deadline', /in the past/],
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
  const found = problems({ kind: 'parcel', qos: 2, tenant: 'acme', device: 'd', target: 'ftp://x', payload: 1, policy: { min: '10s', max: '1s' } });
  expect(Object.keys(found).sort()).toEqual(['kind', 'policy.min', 'qos', 'target']);
});

test('input that is not an object is refused', () => {
  expect(problems(null)).toEqual({ '(delivery)': 'must be an object' });
  expect(problems('event')).toEqual({ '(delivery)': 'must be an object' });
});
