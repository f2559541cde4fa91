import { randomUUID } from 'node:crypto';
import type { Priority } from '../../../src/endpoints/priority';
import type { DeliveryInput, DeliveryResult, MessageKind } from '../../../src/delivery/types';
import { startThreadReceiver, type ThreadReceiver, type ThreadRequest } from '../../support/receiver-thread';
import { startHarness, testAddress, type Harness } from '../../support/temporal';

/*
 * Deadline-first (docs/endpoint-health.md): a storm of telemetry, then events, then command responses with
 * deadlines, to an endpoint limited to 4 attempts a second, once with the default `deadline-first` and once
 * with `fifo`, each endpoint a receiver of its own (on a thread: its stamps are the arrivals). The telemetry
 * and events take 64 s of slots before the first command response is submitted, which has 40 s: time for its
 * workflow's first task on a loaded machine (behind the storm's), not for the slots ahead of it. Deadline-first
 * orders the endpoint's slots, not the worker's workflow tasks: with 20 s and 44 s of slots, full-suite runs beside
 * the cluster tests saw all 12 end "passed before attempt 1 could be sent" (their first workflow task came after the
 * deadline), before and after the outage work alike (measured at 63d1de0 and at this change under the same load).
 */

let harness: Harness;
const receivers: ThreadReceiver[] = [];

beforeAll(async () => {
  // no retry budget: the limits alone decide
  harness = await startHarness(testAddress(), { retryBudget: null });
});
afterAll(async () => {
  await harness?.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

const RATE = 4;
const COUNTS: Record<MessageKind, number> = { telemetry: 240, event: 16, 'command-response': 12 };
const DEADLINE_MS = 40_000;

interface Storm {
  results: Map<MessageKind, DeliveryResult[]>;
  requests: ThreadRequest[];
  deadlines: Map<string, number>;
}

/** The storm to a fresh endpoint with `priority`: telemetry, events, then command responses, each kind submitted after the last. */
async function storm(priority: Priority): Promise<Storm> {
  const receiver = await startThreadReceiver();
  receivers.push(receiver);
  await receiver.route('/in', { status: 202, delayMs: 10 });
  await harness.redeliver.endpoint(receiver.url).set({ rate: RATE, priority });
  const device = `storm-${randomUUID().slice(0, 8)}`;
  const deadlines = new Map<string, number>();
  const input = (kind: MessageKind, i: number): DeliveryInput => {
    const messageId = `${device}-${kind}-${i}`;
    if (kind !== 'command-response') return { kind, tenant: 'acme', device, messageId, target: `${receiver.url}/in`, payload: { i } };
    const deadline = Date.now() + DEADLINE_MS;
    deadlines.set(messageId, deadline);
    return {
      kind,
      tenant: 'acme',
      device,
      messageId,
      target: `${receiver.url}/in`,
      payload: { i },
      command: { requestId: `r-${i}`, deadline },
    };
  };
  const results = new Map<MessageKind, DeliveryResult[]>();
  const pending: Promise<void>[] = [];
  for (const kind of ['telemetry', 'event', 'command-response'] as const) {
    const handles = await harness.redeliver.submitMany(Array.from({ length: COUNTS[kind] }, (_, i) => input(kind, i)));
    pending.push(Promise.all(handles.map((h) => h.result())).then((r) => void results.set(kind, r)));
  }
  await Promise.all(pending);
  return { results, requests: await receiver.requests('/in'), deadlines };
}

const outcomes = (results: DeliveryResult[] = []) =>
  results.reduce<Record<string, number>>((n, r) => ({ ...n, [r.outcome]: (n[r.outcome] ?? 0) + 1 }), {});
const arrivals = (s: Storm, kind: string) =>
  s.requests
    .filter((r) => r.messageId?.includes(`-${kind}-`))
    .map((r) => r.startedAt)
    .sort((a, b) => a - b);

test('deadline-first: every command response arrives before its deadline while telemetry waits; fifo: they expire unsent', async () => {
  const first = await storm('deadline-first');
  const fifo = await storm('fifo');

  // deadline-first: all delivered, each at the endpoint before its deadline (a failure says why each was not)
  const undelivered = first.results.get('command-response')!.filter((r) => r.outcome !== 'delivered');
  expect(undelivered.map((r) => `${r.messageId}: ${r.outcome}: ${r.reason}`)).toEqual([]);
  expect(outcomes(first.results.get('command-response'))).toEqual({ delivered: COUNTS['command-response'] });
  for (const r of first.requests.filter((q) => first.deadlines.has(q.messageId!)))
    expect(r.startedAt).toBeLessThan(first.deadlines.get(r.messageId!)!);
  const telemetry = arrivals(first, 'telemetry');
  // a quarter of the telemetry at least was still waiting when the last command response arrived
  expect(arrivals(first, 'command-response').at(-1)!).toBeLessThan(telemetry[(telemetry.length * 3) / 4]!);

  // fifo: the same storm leaves the command responses behind 256 slots (64 s): they end expired, never sent
  const late = fifo.results.get('command-response')!.filter((r) => r.outcome === 'expired');
  expect(late.length).toBeGreaterThanOrEqual(COUNTS['command-response'] / 2);
  expect(late.every((r) => r.attempts === 0)).toBe(true);

  // telemetry and events all delivered either way
  for (const s of [first, fifo]) {
    expect(outcomes(s.results.get('telemetry'))).toEqual({ delivered: COUNTS.telemetry });
    expect(outcomes(s.results.get('event'))).toEqual({ delivered: COUNTS.event });
  }
}, 420_000);
