import { elementOf, MAX_MESSAGE_IDS_HEADER_BYTES, planSends } from '../../src/activities/batch-requests';
import type { Delivery } from '../../src/delivery/types';
import { validateDelivery } from '../../src/validation/delivery';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const URL = 'https://ingest.example.com/batch';
const input = (target: unknown, extra: Record<string, unknown> = {}) => ({
  kind: 'event',
  tenant: 'acme',
  device: 'sensor-1',
  messageId: 'm-1',
  target,
  payload: { t: 1 },
  ...extra,
});

const delivery = (messageId: string, target: unknown, extra: Record<string, unknown> = {}): Delivery =>
  validateDelivery(input(target, { messageId, ...extra }), { now: NOW });

describe('planSends packs an opted-in endpoint’s messages into bounded requests', () => {
  const batched = (extra: Record<string, unknown> = {}) => ({ url: URL, batch: { format: 'json', maxMessages: 3, ...extra } });
  const all = () => true;

  test('at most maxMessages per request; a message left alone, and other targets, go on their own', () => {
    const ds = [
      ...['a', 'b', 'c', 'd'].map((id) => delivery(id, batched())),
      delivery('plain', URL),
      delivery('other', { ...batched(), headers: { authorization: 'Bearer x' } }),
      delivery('mqtt', 'mqtt://broker.example.com:1883'),
    ];
    const sends = planSends(ds, all);
    expect(sends.map((s) => [s.indexes, s.request !== undefined])).toEqual([
      [[0, 1, 2], true],
      [[4], false],
      [[6], false],
      [[3], false],
      [[5], false],
    ]);
    const request = sends[0]!.request!;
    expect(request).toMatchObject({ url: URL, method: 'POST', timeoutMs: 10_000 });
    expect(request.headers).toEqual({ 'content-type': 'application/json', 'delivery-attempt': '1', 'message-ids': 'a,b,c' });
    expect((JSON.parse(request.body) as { messageId: string }[]).map((m) => m.messageId)).toEqual(['a', 'b', 'c']);
  });

  test('what is done already is left out (a retried activity)', () => {
    const ds = ['a', 'b', 'c'].map((id) => delivery(id, batched()));
    expect(planSends(ds, (i) => i !== 1).map((s) => s.indexes)).toEqual([[0, 2]]);
  });

  test('a body stays within maxBytes; a message bigger than that alone goes on its own', () => {
    const payload = 'x'.repeat(600);
    const ds = ['a', 'b', 'c', 'd'].map((id) => delivery(id, batched({ maxBytes: 1024 }), { payload }));
    ds.splice(2, 0, delivery('big', batched({ maxBytes: 1024 }), { payload: 'y'.repeat(2000) }));
    const sends = planSends(ds, all);
    expect(sends.map((s) => s.indexes)).toEqual([[0], [1], [2], [3], [4]]);
    const smaller = ['a', 'b', 'c'].map((id) => delivery(id, batched({ maxBytes: 1024 }), { payload: 'x'.repeat(300) }));
    const [first, second] = planSends(smaller, all);
    expect(first!.indexes).toEqual([0, 1]);
    expect(Buffer.byteLength(first!.request!.body)).toBeLessThanOrEqual(1024);
    expect(Buffer.byteLength(first!.request!.body) + Buffer.byteLength(elementOf(smaller[2]!)) + 1).toBeGreaterThan(1024);
    expect(second!.indexes).toEqual([2]);
  });

  test('NDJSON: one message per line, whatever line breaks its JSON body holds', () => {
    const target = { url: URL, batch: { format: 'ndjson' } };
    const ds = [
      delivery('a', target, { payload: '{\n  "n": 12345678901234567890\n}', contentType: 'application/json' }),
      delivery('b', target, { kind: 'telemetry', qos: 0, payload: 'line one\nline two' }),
      delivery('c', target, { payload: 'not json', contentType: 'application/vnd.acme+json' }),
    ];
    const { request } = planSends(ds, all)[0]!;
    expect(request!.headers['content-type']).toBe('application/x-ndjson');
    const lines = request!.body.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toBe('');
    // the JSON body's own bytes: its number keeps every digit
    expect(lines[0]).toContain('"payload":{   "n": 12345678901234567890 }}');
    expect(lines.slice(0, 3).map((l) => JSON.parse(l) as unknown)).toEqual([
      {
        messageId: 'a',
        kind: 'event',
        tenant: 'acme',
        device: 'sensor-1',
        contentType: 'application/json',
        payload: { n: expect.any(Number) },
      },
      {
        messageId: 'b',
        kind: 'telemetry',
        tenant: 'acme',
        device: 'sensor-1',
        qos: 0,
        contentType: 'text/plain; charset=utf-8',
        payload: 'line one\nline two',
      },
      { messageId: 'c', kind: 'event', tenant: 'acme', device: 'sensor-1', contentType: 'application/vnd.acme+json', payload: 'not json' },
    ]);
  });

  test('the message-ids header is left out when the ids would not fit it, or one holds a comma', () => {
    const long = Array.from({ length: 40 }, (_, i) => delivery(`${'m'.repeat(120)}-${i}`, { url: URL, batch: { format: 'json' } }));
    expect(long.map((d) => d.messageId).join(',').length).toBeGreaterThan(MAX_MESSAGE_IDS_HEADER_BYTES);
    expect(planSends(long, all)[0]!.request!.headers['message-ids']).toBeUndefined();
    const comma = ['a,1', 'b'].map((id) => delivery(id, { url: URL, batch: { format: 'json' } }));
    expect(planSends(comma, all)[0]!.request!.headers['message-ids']).toBeUndefined();
  });
});
