import { ApplicationFailure } from '@temporalio/common';
import { HOLD_FULL, HOLD_MAX_MESSAGES, type HeldMessage, type HoldReport } from '../../src/contract';
import { validateDelivery } from '../../src/validation/delivery';
import { HoldState } from '../../src/workflows/hold-state';

// An outage hold's state without a server: what the hold workflow keeps, answers and hands to its release activity.

const T0 = Date.parse('2026-11-27T12:00:00Z');
const HOLD_ID = 'hold/acme/ingest.example.com/0';

function held(n: number, kind: 'telemetry' | 'event' | 'command-response' = 'telemetry', at = T0): HeldMessage {
  const delivery = validateDelivery({
    kind,
    tenant: 'acme',
    device: `d-${n}`,
    messageId: `m-${n}`,
    target: 'https://ingest.example.com/in',
    payload: { n },
    ...(kind === 'command-response' && { command: { requestId: `r-${n}`, status: 200 } }),
  });
  return {
    delivery,
    batch: 'batch/acme/b-1',
    heldAt: at,
    attempts: 1,
    firstAttemptAt: at,
    lastAttemptAt: at + 5,
    lastError: { class: 'server', code: 'http-503', reason: 'HTTP 503', attempt: 1, at: new Date(at + 5).toISOString() },
    attemptLog: [{ attempt: 1, startedAt: new Date(at).toISOString(), durationMs: 5, code: 'http-503', ok: false }],
  };
}

const hold = (now = () => T0) => new HoldState({ tenant: 'acme', endpoint: 'ingest.example.com', generation: 0 }, HOLD_ID, now);
const idOf = (m: HeldMessage) => m.delivery.deliveryId;

test('messages are taken once: a batch that hands the same messages in again (its activity run again) adds none', () => {
  const h = hold();
  expect(h.take([held(1), held(2)])).toEqual({ held: 2, already: 0 });
  expect(h.take([held(2), held(3)])).toEqual({ held: 1, already: 1 });
  h.report([{ deliveryId: idOf(held(1)), attempt: null, now: 'delivered' }]);
  // one that left is not taken again either
  expect(h.take([held(1)])).toEqual({ held: 0, already: 1 });
  expect(h.waiting.size).toBe(2);
});

test('a hold refuses what would take it past its caps (messages, bytes), and everything once sealed, as HoldFull', () => {
  const h = hold();
  const refusalOf = (messages: HeldMessage[]) => {
    try {
      h.check(messages);
      return null;
    } catch (err) {
      return err as ApplicationFailure;
    }
  };
  let n = 0;
  // 100 at a time, as batches would hand them in, until the hold refuses
  while (refusalOf(Array.from({ length: 100 }, (_, i) => held(n + i))) === null) h.take(Array.from({ length: 100 }, () => held(n++)));
  const refusal = refusalOf([held(n)].concat(Array.from({ length: 99 }, (_, i) => held(n + 1 + i))))!;
  expect(refusal).toBeInstanceOf(ApplicationFailure);
  expect(refusal.type).toBe(HOLD_FULL);
  expect(refusal.message).toMatch(/has room for no more than/);
  expect(n).toBeGreaterThan(1_000);
  expect(n).toBeLessThanOrEqual(HOLD_MAX_MESSAGES);
  // messages it already has are no refusal: the batch's retry is answered
  expect(refusalOf([held(0), held(1)])).toBeNull();
  expect(h.summary().received).toBe(n);
  h.sealed = true;
  expect(refusalOf([held(n)])?.message).toMatch(/sealed/);
});

test('due: command responses first, then events, then telemetry; a round passes over the hold page by page, each message once', () => {
  const h = hold();
  h.take([held(1, 'telemetry', T0), held(2, 'telemetry', T0 - 1_000), held(3, 'event'), held(4, 'command-response')]);
  const first = h.due({ limit: 3, after: null });
  expect(first.messages.map((m) => m.delivery.messageId)).toEqual(['m-4', 'm-3', 'm-2']);
  const second = h.due({ limit: 3, after: first.next });
  expect(second.messages.map((m) => m.delivery.messageId)).toEqual(['m-1']);
  expect(second.next).toBeNull();
});

test('reports record each attempt and let go of the messages that left; the others wait with their attempt counted', () => {
  const h = hold(() => T0 + 60_000);
  h.take([held(1), held(2)]);
  const attempt = (n: number, ok: boolean, code: string) => ({
    attempt: n,
    startedAt: new Date(T0 + 59_000).toISOString(),
    durationMs: 4,
    code,
    ok,
  });
  const reports: HoldReport[] = [
    { deliveryId: idOf(held(1)), attempt: attempt(2, true, 'http-202'), now: 'delivered' },
    {
      deliveryId: idOf(held(2)),
      attempt: attempt(2, false, 'http-503'),
      error: { class: 'server', code: 'http-503', reason: 'HTTP 503', attempt: 2, at: new Date(T0 + 59_004).toISOString() },
      now: 'waiting',
    },
  ];
  h.report(reports);
  expect(h.left[idOf(held(1))]).toEqual({ left: 'delivered', attempts: 2, code: 'http-202', at: T0 + 60_000, kind: 'telemetry', qos: 1 });
  const waiting = h.view(idOf(held(2)))!;
  expect(waiting.message).toMatchObject({ attempts: 2, lastError: { attempt: 2 } });
  expect(waiting.message!.attemptLog.map((a) => a.attempt)).toEqual([1, 2]);
  expect(waiting.summary).toMatch(/waiting in hold\/acme\/ingest.example.com\/0 .*\(attempt 2: http-503/);
  // a report on a message that is gone (taken out meanwhile) changes nothing
  h.report([{ deliveryId: idOf(held(1)), attempt: attempt(3, false, 'http-503'), now: 'waiting' }]);
  expect(h.left[idOf(held(1))]!.attempts).toBe(2);
  expect(h.view('delivery/acme/nobody/m-0')).toBeNull();
});

test('the summary and the UI details say how many wait and until when; a new run continued as new has them all', () => {
  const h = hold();
  h.take([held(1), held(2, 'event')]);
  const summary = h.summary();
  expect(summary).toMatchObject({ waiting: 2, received: 2, sealed: false, oldestHeldAt: T0 });
  expect(summary.first.map((f) => f.deliveryId)).toEqual([idOf(held(2)), idOf(held(1))]);
  // telemetry's default max age is an hour
  expect(summary.first[1]!.expiresAt).toBe(T0 + 3_600_000);
  expect(h.details()).toMatch(/\*\*2\*\* messages wait for \*\*ingest.example.com\*\*/);
  const next = new HoldState({ tenant: 'acme', endpoint: 'ingest.example.com', generation: 0, carried: h.carried() }, HOLD_ID, () => T0);
  expect(next.summary()).toEqual(summary);
});

test('a message an operator takes out is in no page of the release while it goes; a take-out that failed gives it back', () => {
  const h = hold();
  h.take([held(1), held(2), held(3)]);
  expect(h.takeOut(idOf(held(2)))).toMatchObject({ delivery: { deliveryId: idOf(held(2)) } });
  expect(h.due({ limit: 10, after: null }).messages.map(idOf)).toEqual([idOf(held(1)), idOf(held(3))]);
  // it still waits here until its own delivery has started (status finds it)
  expect(h.view(idOf(held(2)))!.message).not.toBeNull();
  h.keep(idOf(held(2)));
  expect(h.due({ limit: 10, after: null }).messages).toHaveLength(3);
});

test('a report the release sent again counts its attempt once', () => {
  const h = hold();
  h.take([held(1)]);
  const report: HoldReport = {
    deliveryId: idOf(held(1)),
    attempt: { attempt: 2, startedAt: new Date(T0 + 1_000).toISOString(), durationMs: 5, code: 'http-503', ok: false },
    now: 'waiting',
  };
  h.report([report]);
  h.report([report]);
  expect(h.view(idOf(held(1)))!.message!.attemptLog.map((a) => a.attempt)).toEqual([1, 2]);
});
