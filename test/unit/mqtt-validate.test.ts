import { createHash } from 'node:crypto';
import { validateDelivery } from '../../src/validation/delivery';
import { InvalidInputError } from '../../src/errors';
import { validateSubscription } from '../../src/validation/subscription';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const ok = {
  kind: 'event',
  tenant: 'acme',
  device: 'sensor-1',
  messageId: 'm-1',
  target: 'mqtt://broker.example.com:1883',
  payload: { t: 1 },
};

function problems(validate: (raw: unknown) => unknown, input: unknown): Record<string, string> {
  try {
    validate(input);
  } catch (err) {
    if (err instanceof InvalidInputError) return Object.fromEntries(err.problems.map((p) => [p.field, p.message]));
    throw err;
  }
  throw new Error('expected the input to be refused');
}
const deliveryProblems = (input: unknown) => problems((raw) => validateDelivery(raw, { now: NOW }), input);

describe('MQTT delivery targets', () => {
  test("defaults: MQTT 5, no credential, Hono's topic of the kind", () => {
    const d = validateDelivery(ok, { now: NOW });
    expect(d.target).toEqual({
      transport: 'mqtt',
      url: 'mqtt://broker.example.com:1883',
      topic: 'event/acme/sensor-1',
      protocolVersion: '5',
      credential: null,
      timeout: 10_000,
      tls: null,
    });
    expect(d.endpoint).toBe('broker.example.com:1883');
    expect(validateDelivery({ ...ok, kind: 'telemetry', qos: 0 }, { now: NOW }).target).toMatchObject({ topic: 'telemetry/acme/sensor-1' });
    const response = validateDelivery({ ...ok, kind: 'command-response', command: { requestId: 'r-7', status: 404 } }, { now: NOW });
    expect(response.target).toMatchObject({ topic: 'command///res/r-7/404' });
  });

  test('a full target: topic placeholders, version, credential, TLS', () => {
    const d = validateDelivery(
      {
        ...ok,
        target: {
          url: 'mqtts://hub.example.com:8883/',
          topic: 't/{tenant}/{device}',
          protocolVersion: '3.1.1',
          credential: 'hub-acme',
          timeout: '3s',
        },
      },
      { now: NOW },
    );
    expect(d.target).toEqual({
      transport: 'mqtt',
      url: 'mqtts://hub.example.com:8883',
      topic: 't/acme/sensor-1',
      protocolVersion: '3.1.1',
      credential: 'hub-acme',
      timeout: 3_000,
      tls: null,
    });
    // without a credential a producer may trust a CA of its own: nothing of the worker's is at stake
    const anonymous = validateDelivery(
      { ...ok, target: { url: 'mqtts://hub.example.com:8883', tls: { ca: PEM, servername: 'hub' } } },
      { now: NOW },
    );
    expect(anonymous.target).toMatchObject({ credential: null, tls: { ca: PEM, servername: 'hub' } });
  });

  test.each([
    ['a CA', { ca: PEM }],
    ['a server name', { servername: 'attacker.test' }],
    ['both', { ca: PEM, servername: 'attacker.test' }],
  ])("a credential with %s of the producer's: refused, the trust for a credential is its binding's", (_what, tls) => {
    const found = deliveryProblems({ ...ok, target: { url: 'mqtts://hub.example.com:8883', credential: 'hub-acme', tls } });
    expect(found).toEqual({ 'target.tls': expect.stringMatching(/^must not set ca or servername with a credential: .*"brokers"/) });
  });

  test('HTTP targets keep their shape (recorded deliveries and their fingerprints do not change)', () => {
    expect(validateDelivery({ ...ok, target: 'https://api.example.com/in' }, { now: NOW }).target).toEqual({
      url: 'https://api.example.com/in',
      method: 'POST',
      headers: {},
      timeout: 10_000,
    });
  });

  test.each([
    ['credentials in the URL', { ...ok, target: 'mqtt://user:hunter2@broker:1883' }, 'target', /must not carry a user name or password/],
    ['a path in the URL', { ...ok, target: { url: 'mqtt://broker:1883/telemetry' } }, 'target.url', /without a path/],
    [
      'an HTTP method on an MQTT target',
      { ...ok, target: { url: 'mqtt://broker:1883', method: 'PUT' } },
      'target.method',
      /http:\/\/ and https:\/\/ targets only/,
    ],
    [
      'a topic on an HTTP target',
      { ...ok, target: { url: 'https://api.example.com', topic: 'x' } },
      'target.topic',
      /mqtt:\/\/ and mqtts:\/\/ targets only/,
    ],
    ['a wildcard topic', { ...ok, target: { url: 'mqtt://broker:1883', topic: 'event/+/x' } }, 'target.topic', /wildcards/],
    [
      'a request id on an event',
      { ...ok, target: { url: 'mqtt://broker:1883', topic: 'x/{requestId}' } },
      'target.topic',
      /only a command response/,
    ],
    [
      'an unknown MQTT version',
      { ...ok, target: { url: 'mqtt://broker:1883', protocolVersion: '4' } },
      'target.protocolVersion',
      /"5" or "3.1.1"/,
    ],
    [
      'a secret as credential name',
      { ...ok, target: { url: 'mqtt://broker:1883', credential: 'user:pass word' } },
      'target.credential',
      /credential name/,
    ],
    ['TLS settings on plain MQTT', { ...ok, target: { url: 'mqtt://broker:1883', tls: { servername: 'x' } } }, 'target.tls', /mqtts/],
    ['a CA that is no certificate', { ...ok, target: { url: 'mqtts://broker:8883', tls: { ca: 'trust me' } } }, 'target.tls.ca', /PEM/],
  ])('refuses %s, naming the field', (_what, input, field, message) => {
    const found = deliveryProblems(input);
    expect(Object.keys(found)).toContain(field);
    expect(found[field]).toMatch(message);
  });

  test('a password in the URL is never quoted back', () => {
    expect(JSON.stringify(deliveryProblems({ ...ok, target: 'mqtt://user:hunter2@broker:1883' }))).not.toContain('hunter2');
  });

  test('every problem at once', () => {
    const found = deliveryProblems({
      ...ok,
      kind: 'telemetry',
      qos: 2,
      target: { url: 'mqtt://u:p@broker:1883/x', method: 'POST', topic: '#', credential: '' },
    });
    expect(Object.keys(found).sort()).toEqual(['qos', 'target.credential']);
    const wellFormed = deliveryProblems({ ...ok, target: { url: 'mqtt://u:p@broker:1883/x', method: 'POST', topic: '#' } });
    expect(Object.keys(wellFormed).sort()).toEqual(['target.method', 'target.topic', 'target.url']);
  });
});

const sub = { tenant: 'acme', device: 'sensor-1', broker: 'mqtt://broker.example.com:1883', callback: 'https://app.example.com/commands' };
const subscriptionProblems = (input: unknown) => problems((raw) => validateSubscription(raw, { now: NOW }), input);

describe('command subscriptions', () => {
  test("defaults: Hono's command topic, a random client id, responses to the same broker, the guide's backoff without bound", () => {
    const s = validateSubscription({ ...sub, broker: { url: 'mqtt://broker.example.com:1883', credential: 'hub' } }, { now: NOW });
    expect(s).toMatchObject({
      subscriptionId: 'subscription/acme/sensor-1',
      endpoint: 'broker.example.com:1883',
      broker: {
        url: 'mqtt://broker.example.com:1883',
        topic: 'command/acme/sensor-1/req/#',
        protocolVersion: '5',
        credential: 'hub',
        timeout: 10_000,
        tls: null,
      },
      callback: { url: 'https://app.example.com/commands', headers: {}, timeout: 10_000 },
      response: { target: { url: 'mqtt://broker.example.com:1883', credential: 'hub' }, policy: null },
      policy: { jitter: 'full', initial: 200, min: 200, max: 300_000, maxAttempts: 0, maxAge: null },
      commandPolicy: { maxAge: 300_000 },
      downtimeThresholdMs: 60_000,
    });
    // 23 characters, as every MQTT 3.1.1 broker must accept; made once at start and kept in the workflow's input
    expect(s.broker.clientId).toMatch(/^rdsub[0-9a-f]{18}$/);
  });

  test('the client id made up for a subscription cannot be worked out from its id: not the hash it was, not the same twice', () => {
    const hashOfId = `rdsub${createHash('sha256').update('subscription/acme/sensor-1').digest('hex').slice(0, 18)}`;
    const ids = Array.from({ length: 50 }, () => validateSubscription(sub, { now: NOW }).broker.clientId);
    expect(ids).not.toContain(hashOfId);
    expect(new Set(ids).size).toBe(50);
  });

  test("a client id of the caller's own must start with its tenant and a slash; another tenant's is refused naming broker.clientId", () => {
    const withClientId = (tenant: string, clientId: string) => ({ ...sub, tenant, broker: { url: sub.broker, clientId } });
    expect(validateSubscription(withClientId('acme', 'acme/commands-1'), { now: NOW }).broker.clientId).toBe('acme/commands-1');
    expect(validateSubscription(withClientId('acme', 'acme/gw/7'), { now: NOW }).broker.clientId).toBe('acme/gw/7');
    const acmes = validateSubscription(sub, { now: NOW }).broker.clientId;
    for (const [tenant, clientId] of [
      ['globex', acmes], // the id of acme's subscription
      ['globex', `rdsub${createHash('sha256').update('subscription/acme/sensor-1').digest('hex').slice(0, 18)}`],
      ['globex', 'acme/commands-1'],
      ['acme-x', 'acme/commands-1'],
      ['acme', 'acme-x/commands-1'], // acme's prefix is not the start of acme-x's
      ['acme', 'acme/'],
      ['acme', 'commands-1'],
    ] as const) {
      expect(subscriptionProblems(withClientId(tenant, clientId))).toEqual({
        'broker.clientId': expect.stringContaining(`must start with "${tenant}/" (the tenant and a slash)`),
      });
    }
  });

  test.each([
    ['an HTTP broker', { ...sub, broker: 'http://broker:1883' }, 'broker', /use mqtt or mqtts/],
    ['credentials in the broker URL', { ...sub, broker: 'mqtt://u:p@broker:1883' }, 'broker', /must not carry/],
    [
      'a "#" that is not last',
      { ...sub, broker: { url: 'mqtt://broker:1883', topic: 'command/#/req' } },
      'broker.topic',
      /"#" only as the whole last level/,
    ],
    [
      'a "+" inside a level',
      { ...sub, broker: { url: 'mqtt://broker:1883', topic: 'command/a+b/#' } },
      'broker.topic',
      /"\+" only as a whole level/,
    ],
    ['an MQTT callback', { ...sub, callback: 'mqtt://app:1883' }, 'callback', /use http or https/],
    [
      'a bad response credential',
      { ...sub, response: { target: { url: 'mqtt://broker:1883', credential: 'a b' } } },
      'response.target.credential',
      /credential name/,
    ],
    [
      'a credential with a CA of its own',
      { ...sub, broker: { url: 'mqtts://broker:8883', credential: 'hub', tls: { ca: PEM } } },
      'broker.tls',
      /must not set ca or servername with a credential/,
    ],
    [
      'a response credential with a server name of its own',
      { ...sub, response: { target: { url: 'mqtts://broker:8883', credential: 'hub', tls: { servername: 'x' } } } },
      'response.target.tls',
      /with a credential/,
    ],
    ['a bad policy', { ...sub, policy: { max: 'soon' } }, 'policy.max', /duration/],
    ['a negative downtime threshold', { ...sub, downtimeThreshold: '-1s' }, 'downtimeThreshold', /above 0/],
    ['an unknown field', { ...sub, colour: 'red' }, 'colour', /not a known field/],
  ])('refuses %s, naming the field', (_what, input, field, message) => {
    const found = subscriptionProblems(input);
    expect(Object.keys(found)).toContain(field);
    expect(found[field]).toMatch(message);
  });
});
