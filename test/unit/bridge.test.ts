/**
 * The MQTT bridge's pure parts: Hono's topic layout, a message as a delivery (ids, QoS, payload), the order of
 * acknowledgements, and the configuration's validation.
 */
import { AckQueue } from '../../src/bridge/acks';
import { deliveryOf, derivedMessageId, PUBACK, type MessageMapping, type ReceivedPublish } from '../../src/bridge/message';
import { mapTopic } from '../../src/bridge/topics';
import { InvalidInputError } from '../../src/errors';
import { validateBridgeConfig } from '../../src/validation/bridge';

const mapping: MessageMapping = {
  targets: {
    telemetry: 'https://ingest.example.com/t/{tenant}/{device}',
    event: 'https://ingest.example.com/e/{tenant}/{device}',
    'command-response': 'https://ingest.example.com/c/{requestId}/{status}',
  },
  policy: null,
  messageIdProperty: 'message-id',
  clientId: 'bridge-1',
};
const packet = (topic: string, extra: Partial<ReceivedPublish> = {}): ReceivedPublish => ({
  topic,
  payload: Buffer.from('{"temp":21.5}'),
  qos: 1,
  messageId: 7,
  ...extra,
});
const problems = (raw: unknown): Record<string, string> => {
  try {
    validateBridgeConfig(raw);
  } catch (err) {
    if (err instanceof InvalidInputError) return Object.fromEntries(err.problems.map((p) => [p.field, p.message]));
    throw err;
  }
  return {};
};

describe("Hono's topic layout", () => {
  test.each([
    ['telemetry/acme/sensor-1', { kind: 'telemetry', tenant: 'acme', device: 'sensor-1' }],
    ['t/acme/sensor-1', { kind: 'telemetry', tenant: 'acme', device: 'sensor-1' }],
    ['event/acme/sensor-1', { kind: 'event', tenant: 'acme', device: 'sensor-1' }],
    ['e/acme/sensor-1', { kind: 'event', tenant: 'acme', device: 'sensor-1' }],
    [
      'command/acme/sensor-1/res/req-9/200',
      { kind: 'command-response', tenant: 'acme', device: 'sensor-1', requestId: 'req-9', status: 200 },
    ],
    ['c/acme/sensor-1/s/req-9/404', { kind: 'command-response', tenant: 'acme', device: 'sensor-1', requestId: 'req-9', status: 404 }],
  ])('%s', (topic, expected) => {
    expect(mapTopic(topic)).toEqual({ ok: true, ...expected });
  });

  test.each([
    ['telemetry', 'names no tenant or no device'],
    ['telemetry//sensor-1', 'names no tenant or no device'],
    ['command///res/req-9/200', 'names no tenant or no device'],
    ['sensors/acme/sensor-1', 'first level "sensors" names no kind'],
    ['event/acme/sensor-1/extra', 'levels after the device'],
    ['command/acme/sensor-1/req/req-9/setBrightness', 'not a command response'],
    ['command/acme/sensor-1/res/req-9/ok', 'status "ok" is not an HTTP-style status code'],
  ])('%s is refused: %s', (topic, why) => {
    const mapped = mapTopic(topic);
    expect(mapped.ok).toBe(false);
    expect(!mapped.ok && mapped.reason).toContain(why);
  });
});

describe('a message as a delivery', () => {
  test("kind, tenant and device from the topic; the id from the user property; telemetry's QoS from the packet", () => {
    const converted = deliveryOf(packet('t/acme/sensor-1', { qos: 0, properties: { userProperties: { 'message-id': 'm-1' } } }), mapping);
    expect(converted).toEqual({
      ok: true,
      input: {
        kind: 'telemetry',
        tenant: 'acme',
        device: 'sensor-1',
        messageId: 'm-1',
        qos: 0,
        target: mapping.targets.telemetry,
        payload: '{"temp":21.5}',
      },
    });
  });

  test("a command response carries its request id and status; the MQTT 5 content type is the delivery's", () => {
    const converted = deliveryOf(
      packet('command/acme/sensor-1/res/req-9/503', { properties: { contentType: 'application/json' } }),
      mapping,
    );
    expect(converted.ok && converted.input).toMatchObject({
      kind: 'command-response',
      command: { requestId: 'req-9', status: 503 },
      contentType: 'application/json',
      target: mapping.targets['command-response'],
    });
    expect(converted.ok && converted.input.qos).toBeUndefined();
  });

  test('without the property, a QoS 1 id comes from the session, packet id, topic and payload: the same when the broker resends it', () => {
    const first = deliveryOf(packet('event/acme/sensor-1'), mapping);
    const resent = deliveryOf(packet('event/acme/sensor-1'), mapping);
    const id = first.ok ? first.input.messageId! : '';
    expect(id).toMatch(/^mqtt-[A-Za-z0-9_-]{32}$/);
    expect(resent.ok && resent.input.messageId).toBe(id);
    // another packet in flight, another session, another payload: another id
    const payload = Buffer.from('{"temp":21.5}');
    expect(derivedMessageId({ topic: 'event/acme/sensor-1', qos: 1, messageId: 8 }, payload, 'bridge-1')).not.toBe(id);
    expect(derivedMessageId({ topic: 'event/acme/sensor-1', qos: 1, messageId: 7 }, payload, 'bridge-2')).not.toBe(id);
    expect(derivedMessageId({ topic: 'event/acme/sensor-1', qos: 1, messageId: 7 }, Buffer.from('{}'), 'bridge-1')).not.toBe(id);
  });

  test('QoS 0 messages, never resent, each get an id of their own even when alike', () => {
    const a = deliveryOf(packet('telemetry/acme/sensor-1', { qos: 0, messageId: undefined }), mapping);
    const b = deliveryOf(packet('telemetry/acme/sensor-1', { qos: 0, messageId: undefined }), mapping);
    expect(a.ok && b.ok && a.input.messageId !== b.input.messageId).toBe(true);
  });

  test('a topic outside the layout and a payload that is not UTF-8 are refused with the PUBACK code that says why', () => {
    expect(deliveryOf(packet('sensors/acme/x'), mapping)).toMatchObject({ ok: false, reasonCode: PUBACK.topicNameInvalid });
    expect(deliveryOf(packet('event/acme/x', { payload: Buffer.from([0xff, 0xfe, 0x00]) }), mapping)).toMatchObject({
      ok: false,
      reasonCode: PUBACK.payloadFormatInvalid,
    });
  });
});

describe('acknowledgements', () => {
  test('go in the order the messages came: one settled early waits for those before it', () => {
    const sent: [number, number][] = [];
    const acks = new AckQueue((id, code) => sent.push([id, code]));
    const [a, b, c] = [acks.receive(1), acks.receive(2), acks.receive(3)];
    c(0);
    b(0x83);
    expect(sent).toEqual([]);
    a(0);
    expect(sent).toEqual([
      [1, 0],
      [2, 0x83],
      [3, 0],
    ]);
    expect(acks.pending).toBe(0);
  });

  test('none go once the connection is gone (the broker resends those messages), and none twice', () => {
    const sent: number[] = [];
    const acks = new AckQueue((id) => sent.push(id));
    const a = acks.receive(1);
    const b = acks.receive(2);
    a(0);
    a(0);
    acks.close();
    b(0);
    expect(sent).toEqual([1]);
  });
});

describe('the configuration', () => {
  const valid = { broker: 'mqtt://broker.example.com:1883', target: 'https://ingest.example.com/{tenant}/{device}' };

  test("defaults: group redeliver, Hono's topics, message-id, a stable client id, a day's session, 4,000 in flight", () => {
    const config = validateBridgeConfig(valid);
    expect(config.group).toBe('redeliver');
    expect(config.topics).toContain('telemetry/+/+');
    expect(config.topics).toContain('c/+/+/s/+/+');
    expect(config.mapping.messageIdProperty).toBe('message-id');
    expect(config.broker).toMatchObject({ url: 'mqtt://broker.example.com:1883', credential: null, sessionExpirySeconds: 86_400 });
    expect(config.broker.clientId).toMatch(/^redeliver-/);
    expect(config.broker.clientId).toBe(validateBridgeConfig(valid).broker.clientId);
    expect(config.receiveMaximum).toBe(4_000);
  });

  test('every wrong field is named at once', () => {
    expect(
      problems({
        broker: { url: 'mqtt://user:secret@broker.example.com', credential: 'has space', sessionExpiry: 'soon' },
        group: 'a/b',
        topics: ['telemetry/#/x', '$share/g/event/+/+', 'sensors/+'],
        target: 'ftp://x',
        batch: { linger: '90 days', maxMessages: 5000 },
        receiveMaximum: 0,
        unknown: true,
      }),
    ).toEqual({
      'broker.url': expect.stringContaining('must not carry a user name or password'),
      'broker.credential': expect.stringContaining('must be a credential name'),
      'broker.sessionExpiry': expect.stringContaining('must be a duration'),
      group: expect.stringContaining('letters, digits'),
      'topics[0]': expect.stringContaining('"#" only as the whole last level'),
      'topics[1]': expect.stringContaining('the topic filter alone'),
      'topics[2]': expect.stringContaining("matches no topic of Hono's layout"),
      target: expect.stringContaining('scheme "ftp" is not supported'),
      'batch.linger': 'must be a duration from 0 to 24 days',
      'batch.maxMessages': 'must be an integer from 1 to 1000',
      receiveMaximum: 'must be at least 1',
      unknown: 'is not a known field',
    });
  });

  test("a target is checked as each kind's delivery would check it, and named where it was given", () => {
    expect(problems({ broker: valid.broker, topics: ['event/+/+'] })).toEqual({
      target: 'is required: event messages need a target (give target, or targets.event)',
    });
    expect(
      problems({
        broker: valid.broker,
        target: 'https://ingest.example.com/{tenant}',
        targets: { 'command-response': { url: 'https://x.example.com', timeout: '1h' } },
        policy: { jitter: 'sometimes' },
      }),
    ).toEqual({
      'targets.command-response.timeout': expect.stringContaining('at most 5m'),
      'policy.jitter': expect.any(String),
    });
    // a placeholder only a command response has: wrong for telemetry and for events, said once
    expect(
      problems({ broker: valid.broker, target: { url: 'mqtt://hub.example.com', topic: 'out/{requestId}' }, topics: ['t/+/+', 'e/+/+'] }),
    ).toEqual({ 'target.topic': expect.stringContaining('uses {requestId}') });
  });

  test("a credential may not come with a CA of the configuration's own: its TLS trust is its binding's", () => {
    expect(
      problems({ ...valid, broker: { url: 'mqtts://broker.example.com', credential: 'bridge', tls: { servername: 'other.example.com' } } }),
    ).toEqual({ 'broker.tls': expect.stringContaining('must not set ca or servername with a credential') });
  });
});
