import fc from 'fast-check';
import { Agent } from 'undici';
import { httpRequestOf, mqttPublishOf } from '../../src/activities/deliver';
import { classify } from '../../src/classify';
import { defaultMaxDeliveryBytes, validateDelivery } from '../../src/validation/delivery';
import { storedBytes } from '../../src/validation/limits';
import { deliveryDetails, deliverySummary } from '../../src/delivery/summary';
import { isMqttTarget, type Delivery } from '../../src/delivery/types';
import { InvalidInputError } from '../../src/errors';
import { sendHttp } from '../../src/transports/http';

// Submit's promise (issue 15): any input is either refused with an InvalidInputError naming its fields, or
// accepted — and then its first attempt can be sent: the activity's own request goes through undici's
// checks up to the connection, which this agent refuses without touching the network.
const NOW = Date.parse('2026-11-21T12:00:00Z');
const OFFLINE = 'TEST_OFFLINE';
const offline = new Agent({
  connect: (_options, callback) => callback(Object.assign(new Error('no network in this test'), { code: OFFLINE }), null),
});
afterAll(() => offline.close());

/** Mostly `good`, sometimes `bad`: each field is wrong in about one input in nine, so both outcomes are common. */
const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) =>
  fc.oneof({ arbitrary: good, weight: 8 }, { arbitrary: bad, weight: 1 });

const oddChars = fc.constantFrom(...'\r\n\t\u0000\u0007\u007f\u0085 /+#@:{}é✓az0-_', '🔥');
const junk = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: oddChars, maxLength: 20 }),
  fc.constantFrom(127, 129, 161, 9000, 70_000, 400_000).map((n) => 'y'.repeat(n)),
);
const anything = fc.oneof(
  junk,
  fc.anything({ withBigInt: true, withDate: true, withNullPrototype: true, withSparseArray: true, maxDepth: 3 }),
);

const id = mostly(fc.stringMatching(/^[A-Za-z0-9._:~=-]{1,24}$/), anything);
const host = fc.oneof(
  fc.domain(),
  fc.ipV4(),
  fc.ipV6().map((h) => `[${h}]`),
  fc.constantFrom('', 'localhost', 'exa mple.com', 'ex\u0000.com', 'é.example', 'user:pw@h.example', '@h.example'),
  fc.constantFrom('h.example:0', 'h.example:65536', 'h.example:8080'),
);
const path = fc.oneof(
  fc.constant(''),
  fc.webPath(),
  junk.map((s) => `/${s}`),
  fc.constant('/{tenant}/{device}/{requestId}?s={status}'),
);
const scheme = fc.constantFrom('http', 'https', 'HTTPS', 'mqtt', 'mqtts', 'ftp', 'javascript');
const oddUrl = fc.oneof(
  fc.tuple(scheme, fc.constantFrom('://', ':///', ':/', ':', ':\\\\'), host, path).map((parts) => parts.join('')),
  junk,
);
const httpUrl = mostly(fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }), oddUrl);
const tokenName = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/);
const reservedName = fc.mixedCase(
  fc.constantFrom(
    ...['transfer-encoding', 'content-length', 'expect', 'connection', 'host', 'keep-alive', 'te', 'upgrade'],
    ...['content-type', 'message-id', 'delivery-attempt', 'qos-level', 'webhook-signature'],
  ),
);
const headers = mostly(
  fc.dictionary(mostly(tokenName, fc.oneof(reservedName, junk)), mostly(fc.string(), junk), { maxKeys: 6 }),
  fc.oneof(anything, fc.constant(Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`x-h${i}`, 'v'])))),
);
const duration = mostly(fc.oneof(fc.integer({ min: 1, max: 300_000 }), fc.constantFrom('200ms', '5s', '1m', '5m')), anything);
const deadline = mostly(
  fc.integer({ min: NOW + 1000, max: 8.64e15 }).chain((t) => fc.constantFrom<unknown>(t, new Date(t).toISOString(), new Date(t))),
  fc.oneof(
    fc.date(),
    fc.double(),
    fc.constantFrom(8.64e15 + 1, 1e300, -1e300, '+275760-09-13T00:00:00.001Z', '+300000-01-01T00:00:00Z'),
    anything,
  ),
);

const httpTarget = fc.oneof(
  httpUrl,
  fc.record(
    { url: httpUrl, method: mostly(fc.constantFrom('POST', 'PUT', 'PATCH'), anything), headers, timeout: duration },
    { requiredKeys: ['url'] },
  ),
);
const mqttTarget = fc.record(
  {
    url: mostly(
      fc.tuple(fc.constantFrom('mqtt', 'mqtts'), fc.domain(), fc.integer({ min: 1, max: 65535 })).map(([s, h, p]) => `${s}://${h}:${p}`),
      oddUrl,
    ),
    topic: mostly(fc.constantFrom('t/{tenant}/{device}', 'alarms/x'), junk),
    protocolVersion: mostly(fc.constantFrom('5', '3.1.1'), anything),
    credential: mostly(fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), anything),
  },
  { requiredKeys: ['url'] },
);
const target = mostly(fc.oneof({ arbitrary: httpTarget, weight: 3 }, { arbitrary: mqttTarget, weight: 1 }), anything);

const REQUIRED = ['kind', 'tenant', 'device', 'target', 'payload'] as const;
const common = {
  tenant: id,
  device: id,
  messageId: id,
  target,
  payload: mostly(fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.string({ unit: 'grapheme' })), anything),
  contentType: mostly(fc.constantFrom('application/json', 'text/csv; charset=utf-8'), junk),
  policy: mostly(
    fc.record({ jitter: fc.constantFrom('full', 'equal', 'none'), max: duration, maxAge: duration, deadline }, { requiredKeys: [] }),
    anything,
  ),
  overrides: mostly(
    fc.dictionary(fc.constantFrom('http-409', 'net-ECONNRESET', 'timeout'), fc.constantFrom('success', 'client', 'server')),
    anything,
  ),
};
const status = mostly(fc.integer({ min: 200, max: 599 }), anything);
const command = mostly(fc.record({ requestId: id, status, deadline }, { requiredKeys: ['requestId'] }), anything);
const qos = mostly(fc.constantFrom(0, 1), anything);
const input = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('telemetry'), qos, ...common }, { requiredKeys: [...REQUIRED] }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('event'), ...common }, { requiredKeys: [...REQUIRED] }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('command-response'), command, ...common }, { requiredKeys: [...REQUIRED, 'command'] }),
  },
  // nothing in its place: unknown kinds, fields that do not apply, unknown fields, no object at all
  {
    weight: 1,
    arbitrary: fc.record({ kind: anything, qos: anything, command: anything, colour: anything, ...common }, { requiredKeys: [] }),
  },
  { weight: 1, arbitrary: anything },
);

test('any input is refused naming its fields, or accepted and sendable', async () => {
  const seen = { accepted: 0, refused: 0 };
  await fc.assert(
    fc.asyncProperty(input, async (raw) => {
      let delivery: Delivery;
      try {
        delivery = validateDelivery(raw, { now: NOW });
      } catch (err) {
        expectNamedFields(err, raw);
        seen.refused++;
        return;
      }
      seen.accepted++;
      await expectSendable(delivery);
    }),
    // seeded, so a run is repeatable; FC_SEED and FC_RUNS explore further
    { numRuns: Number(process.env.FC_RUNS ?? 1500), seed: Number(process.env.FC_SEED ?? 15) },
  );
  // both outcomes are common: neither half of the property is vacuous
  expect(seen.accepted).toBeGreaterThan(150);
  expect(seen.refused).toBeGreaterThan(150);
});

const FIELDS = ['kind', 'qos', 'tenant', 'device', 'messageId', 'target', 'payload', 'contentType', 'command', 'policy', 'overrides'];

function expectNamedFields(err: unknown, raw: unknown): void {
  if (!(err instanceof InvalidInputError)) throw err;
  expect(err.problems.length).toBeGreaterThan(0);
  const fields = ['(delivery)', ...FIELDS, ...(typeof raw === 'object' && raw !== null ? Object.keys(raw) : [])];
  for (const problem of err.problems) {
    const named = fields.find((f) => problem.field === f || [`${f}.`, `${f}[`].some((prefix) => problem.field.startsWith(prefix)));
    expect({ field: problem.field, named }).toEqual({ field: problem.field, named: expect.any(String) });
    expect(problem.message).toMatch(/\S/);
  }
}

/** What start and the first attempt do with an accepted delivery: nothing may fail for a reason submit could see. */
async function expectSendable(delivery: Delivery): Promise<void> {
  deliverySummary(delivery);
  deliveryDetails(delivery);
  expect(storedBytes(delivery)).toBeLessThanOrEqual(defaultMaxDeliveryBytes());
  const target = delivery.target;
  if (isMqttTarget(target)) {
    const publish = mqttPublishOf(delivery, target, 1);
    const broker = new URL(publish.url);
    expect(broker.hostname).not.toBe('');
    expect(broker.port).not.toBe('0');
    expect(publish.topic).toMatch(/^[^+#\u0000]+$/);
    return;
  }
  const request = httpRequestOf(delivery, target, 1);
  const names = Object.keys(request.headers).map((n) => n.toLowerCase());
  expect(new Set(names).size).toBe(names.length);
  const { outcome } = await sendHttp(request, offline);
  // the request passed every check of undici's and reached the connection: not invalid-target, no header error
  expect(outcome).toMatchObject({ kind: 'network', code: OFFLINE });
  expect(classify(outcome).code).toBe(`net-${OFFLINE}`);
}
