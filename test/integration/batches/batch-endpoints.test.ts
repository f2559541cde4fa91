import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import type { ReceivedRequest } from '../../support/receiver';
import { useHarnessAndReceiver } from '../../support/setup';
import { waitFor } from '../../support/wait';

// endpoints that take many messages in one request (target.batch, docs/batches.md), on a real dev server. A failed
// request's messages each get a delivery of their own here, as with `outage off`: its messages fail together on purpose
// (with holds on, they would wait in the endpoint's outage hold: outage-hold.test.ts)
const env = useHarnessAndReceiver({ outageHold: false });

interface Element {
  messageId: string;
  kind: string;
  tenant: string;
  device: string;
  contentType: string;
  payload: unknown;
}

const messages = (n: number, path: string, batch: { format: 'json' | 'ndjson'; maxMessages?: number }): DeliveryInput[] => {
  const device = `be-${randomUUID().slice(0, 8)}`;
  return Array.from({ length: n }, (_, i) => ({
    kind: 'event',
    tenant: 'acme',
    device,
    messageId: `${device}-${i}`,
    payload: { i },
    target: { url: `${env.receiver.url}${path}`, batch },
    policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
  }));
};
const to = (path: string) => env.receiver.requests.filter((r) => r.path === path);
const batched = (path: string) => to(path).filter((r) => r.messageId === undefined);
const elementsOf = (r: ReceivedRequest): Element[] =>
  r.headers['content-type'] === 'application/x-ndjson'
    ? r.body
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Element)
    : (JSON.parse(r.body) as Element[]);

test('a batch’s messages to an opted-in endpoint arrive in ceil(N / maxMessages) requests, each message once', async () => {
  const inputs = messages(25, '/together', { format: 'json', maxMessages: 10 });
  const submission = await env.h.redeliver.submitBatch(inputs);
  const result = await submission.batches[0]!.result();
  expect(result).toMatchObject({ messages: 25, delivered: 25, handedOver: 0 });

  const requests = to('/together');
  expect(requests).toHaveLength(3);
  const ids = requests.flatMap((r) => elementsOf(r).map((e) => e.messageId));
  expect(ids.sort()).toEqual(inputs.map((m) => m.messageId!).sort());
  for (const r of requests) {
    expect(r.headers).toMatchObject({ 'content-type': 'application/json', 'delivery-attempt': '1' });
    expect(r.headers['message-ids']).toBe(
      elementsOf(r)
        .map((e) => e.messageId)
        .join(','),
    );
    expect(elementsOf(r)[0]).toMatchObject({ kind: 'event', tenant: 'acme', device: inputs[0]!.device, contentType: 'application/json' });
  }
  // each message's result is its request's: one code, one time per request
  expect(new Set(result.results.map((r) => r.code))).toEqual(new Set(['http-202']));
  expect(new Set(result.results.map((r) => r.at)).size).toBeLessThanOrEqual(3);
});

test('a failed batched request hands each message over: a 503 is retried one by one, a 400 makes each a dead letter', async () => {
  env.receiver.route('/unavailable', (req) => ({ status: req.messageId === undefined ? 503 : 202 }));
  env.receiver.route('/refusing', () => ({ status: 400 }));
  const retried = messages(4, '/unavailable', { format: 'json' });
  const refused = messages(3, '/refusing', { format: 'json' });
  const submission = await env.h.redeliver.submitBatch([...retried, ...refused]);
  const result = await submission.batches[0]!.result();
  expect(result).toMatchObject({ messages: 7, delivered: 0, handedOver: 7 });
  expect(result.results.map((r) => r.code)).toEqual([...retried.map(() => 'http-503'), ...refused.map(() => 'http-400')]);

  const outcomes = new Map((await submission.outcomes()).map((o) => [o.messageId, o]));
  for (const m of retried) {
    expect(outcomes.get(m.messageId!)).toMatchObject({ outcome: 'delivered', attempts: 2 });
    // attempt 2 went on its own, as any delivery's
    expect(env.receiver.of(m.messageId!).map((r) => [r.path, r.attempt, r.body])).toEqual([['/unavailable', 2, JSON.stringify(m.payload)]]);
  }
  expect(batched('/unavailable')).toHaveLength(1);
  for (const m of refused) {
    expect(outcomes.get(m.messageId!)).toMatchObject({ outcome: 'rejected', attempts: 1, code: 'http-400' });
  }
  expect(to('/refusing')).toHaveLength(1);
  // dead letters like any other (visibility catches up with the closed runs)
  const expected = submission.deliveryIds.slice(retried.length).sort();
  const listLetters = async () => {
    const letters: string[] = [];
    for await (const l of env.h.redeliver.deadLetters({ device: refused[0]!.device })) letters.push(l.deliveryId);
    return letters.sort();
  };
  expect(await waitFor(listLetters, (letters) => letters.length === expected.length, 15_000, 'the dead letters listed')).toEqual(expected);
});

test('NDJSON: one message per line, its JSON payload as JSON', async () => {
  const inputs = messages(4, '/lines', { format: 'ndjson' });
  const result = await (await env.h.redeliver.submitBatch(inputs)).batches[0]!.result();
  expect(result).toMatchObject({ delivered: 4 });
  const [request, ...more] = to('/lines');
  expect(more).toHaveLength(0);
  expect(request!.headers['content-type']).toBe('application/x-ndjson');
  expect(request!.body.endsWith('\n')).toBe(true);
  expect(elementsOf(request!).map((e) => [e.messageId, e.payload])).toEqual(inputs.map((m) => [m.messageId, m.payload]));
});
