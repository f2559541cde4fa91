import Ajv2020 from 'ajv/dist/2020';
import { openApiDocument } from '../../src/api/openapi';
import { ROUTES } from '../../src/api/routes';
import { checkSettingsChange } from '../../src/endpoints/controls';
import { InvalidInputError } from '../../src/errors';
import { validateDelivery } from '../../src/validation/delivery';
import { validateSubscription } from '../../src/validation/subscription';

// The API's document says in JSON Schema what the validation code checks (src/api/document-rules.ts). Here a JSON
// Schema validator that knows nothing of redeliver reads the document, and each input below gets the same verdict from
// it as from the code: a client that checks its requests against the document is told what the API would answer.

const document = openApiDocument(ROUTES, 'test') as { components: { schemas: Record<string, unknown> } };
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema({ $id: 'doc', components: document.components });
const byDocument = (name: string) => {
  const check = ajv.getSchema(`doc#/components/schemas/${name}`)!;
  return (input: unknown) => check(input) as boolean;
};

/** Whether `check` accepts the input: false when it throws InvalidInputError. */
const accepts = (check: () => unknown) => {
  try {
    check();
    return true;
  } catch (err) {
    if (err instanceof InvalidInputError) return false;
    throw err;
  }
};

const delivery = (fields: Record<string, unknown>) => ({
  kind: 'event',
  tenant: 'acme',
  device: 'sensor-1',
  target: 'https://ingest.example.com/e',
  payload: { t: 21 },
  ...fields,
});

const DELIVERIES: [string, Record<string, unknown>, boolean][] = [
  ['an event to an https URL', delivery({}), true],
  ['a URL with a port, a path with placeholders and a query', delivery({ target: 'http://10.0.0.7:8080/t/{tenant}/{device}?x=1' }), true],
  ['an IPv6 host', delivery({ target: 'http://[::1]:9000/e' }), true],
  ['an MQTT broker', delivery({ target: 'mqtts://broker.example.com:8883' }), true],
  ['telemetry with qos 0 sent once', delivery({ kind: 'telemetry', qos: 0, policy: { maxAttempts: 1 } }), true],
  ['a command response with its command', delivery({ kind: 'command-response', command: { requestId: 'r-1', status: 200 } }), true],
  [
    'an HTTP target object',
    delivery({ target: { url: 'https://a.example/e', method: 'PUT', headers: { 'X-Trace': 'abc' }, timeout: '30s', signing: 'acme-key' } }),
    true,
  ],
  [
    'an MQTT target object',
    delivery({ target: { url: 'mqtt://broker:1883', topic: 'events/{device}', protocolVersion: '3.1.1', timeout: 5000 } }),
    true,
  ],
  ['a policy', delivery({ policy: { jitter: 'equal', initial: '1s', max: '10m', multiplier: 3, maxAttempts: 5, maxAge: null } }), true],
  ['another scheme', delivery({ target: 'ftp://a.example/e' }), false],
  ['no host', delivery({ target: 'http:///e' }), false],
  ['a user in the URL', delivery({ target: 'https://user:pw@a.example/e' }), false],
  ['port 0', delivery({ target: 'http://a.example:0/e' }), false],
  ['a port beyond 65535', delivery({ target: 'http://a.example:70000/e' }), false],
  ['a host ending in a number that is no IPv4 address', delivery({ target: 'http://a.1/e' }), false],
  ['a broker with a path', delivery({ target: 'mqtt://broker:1883/topic' }), false],
  ['qos on an event', delivery({ qos: 1 }), false],
  ['a command response without its command', delivery({ kind: 'command-response' }), false],
  ['a command on an event', delivery({ command: { requestId: 'r-1' } }), false],
  ['an MQTT field on an HTTP target', delivery({ target: { url: 'https://a.example/e', topic: 't' } }), false],
  ['an HTTP field on an MQTT target', delivery({ target: { url: 'mqtt://broker', method: 'PUT' } }), false],
  ['a header the HTTP client owns', delivery({ target: { url: 'https://a.example/e', headers: { connection: 'close' } } }), false],
  ['a header redeliver sets', delivery({ target: { url: 'https://a.example/e', headers: { 'message-id': 'x' } } }), false],
  ['a header name that is no token', delivery({ target: { url: 'https://a.example/e', headers: { 'a b': 'x' } } }), false],
  ['an attempt timeout over 5 min', delivery({ target: { url: 'https://a.example/e', timeout: 600_000 } }), false],
  ['a timeout string over 5 min', delivery({ target: { url: 'https://a.example/e', timeout: '6m' } }), false],
  ['an unknown policy field', delivery({ policy: { retries: 3 } }), false],
  ['a multiplier below 1', delivery({ policy: { multiplier: 0.5 } }), false],
  ['a negative initial wait', delivery({ policy: { initial: -1 } }), false],
  ['the reserved tenant', delivery({ tenant: 'redeliver' }), false],
];

test.each(DELIVERIES)('a delivery, %s: the document and validateDelivery agree', (_, input, accepted) => {
  expect(accepts(() => validateDelivery(input))).toBe(accepted);
  expect(byDocument('DeliveryInput')(input)).toBe(accepted);
});

const subscription = (fields: Record<string, unknown>) => ({
  tenant: 'acme',
  device: 'sensor-1',
  broker: 'mqtt://broker.example.com:1883',
  callback: 'https://app.example.com/commands',
  ...fields,
});

const SUBSCRIPTIONS: [string, Record<string, unknown>, boolean][] = [
  ['a broker and a callback URL', subscription({}), true],
  [
    'objects, a response target and durations',
    subscription({
      broker: { url: 'mqtts://b.example', topic: 'cmd/{device}/#', clientId: 'acme/c-1' },
      callback: { url: 'http://app:8080/c', timeout: '10s' },
      response: { target: 'https://app.example.com/res' },
      commandMaxAge: '5m',
      downtimeThreshold: 60_000,
    }),
    true,
  ],
  ['an http broker', subscription({ broker: 'http://broker.example.com' }), false],
  ['an mqtt callback', subscription({ callback: 'mqtt://broker' }), false],
  ['a response target of another scheme', subscription({ response: { target: 'ftp://a.example/x' } }), false],
  ['a command max age of 0', subscription({ commandMaxAge: 0 }), false],
  [
    'a callback header redeliver sets',
    subscription({ callback: { url: 'https://app.example.com/c', headers: { 'command-name': 'x' } } }),
    false,
  ],
];

test.each(SUBSCRIPTIONS)('a subscription, %s: the document and validateSubscription agree', (_, input, accepted) => {
  expect(accepts(() => validateSubscription(input))).toBe(accepted);
  expect(byDocument('SubscriptionInput')(input)).toBe(accepted);
});

const SETTINGS: [string, Record<string, unknown>, boolean][] = [
  [
    'limits, breaker and modes',
    { maxInFlight: 50, rate: '200/s', breaker: 'on', probeEvery: '5s', autoDisableAfter: '2h', priority: 'fifo', outage: 'hold' },
    true,
  ],
  ['nulls and offs', { maxInFlight: 'off', rate: null, probeEvery: null, autoDisableAfter: 'off' }, true],
  ['a rate per minute', { rate: '12000/min' }, true],
  ['no field at all', {}, false],
  ['maxInFlight 0', { maxInFlight: 0 }, false],
  ['a fractional maxInFlight', { maxInFlight: 1.5 }, false],
  ['a rate of 0', { rate: 0 }, false],
  ['a probe every 50 ms', { probeEvery: 50 }, false],
  ['a probe every 2 h', { probeEvery: '2h' }, false],
  ['auto-disable after 30 s', { autoDisableAfter: '30s' }, false],
  ['an unknown field', { retries: 3 }, false],
];

test.each(SETTINGS)("an endpoint's settings, %s: the document and checkSettingsChange agree", (_, input, accepted) => {
  // the route refuses an empty change before the check (it changes nothing)
  expect(Object.keys(input).length > 0 && checkSettingsChange(input).problems.length === 0).toBe(accepted);
  expect(byDocument('EndpointSettingsChange')(input)).toBe(accepted);
});
