import { ApplicationFailure, type SearchAttributeUpdatePair } from '@temporalio/common';
import { validateDelivery } from '../../src/validation/delivery';
import { DeliveryTracker } from '../../src/workflows/delivery-state';
import type { StartPlace } from '../../src/contract';

// An ordered delivery's side of its key (docs/ordering.md) without a server: what it shows while queued, what
// the controls do then, and which search attribute updates (commands) its turn costs.

const T0 = Date.parse('2026-11-21T12:00:00Z');
const BEFORE = 'delivery/acme/valve-7/m-41';
const DEAD = 'delivery/acme/valve-7/m-40';

function queued(place: StartPlace | null = { position: 2, behind: BEFORE }, policy: Record<string, unknown> = {}) {
  const delivery = validateDelivery(
    {
      kind: 'event',
      tenant: 'acme',
      device: 'valve-7',
      messageId: 'm-42',
      orderingKey: 'valve-7',
      target: 'https://example.com/in',
      payload: {},
      policy,
    },
    { now: T0 },
  );
  const clock = { t: T0 };
  const upserts: Record<string, unknown>[] = [];
  const effects = {
    details: () => undefined,
    upsert: (pairs: SearchAttributeUpdatePair[]) => upserts.push(Object.fromEntries(pairs.map((p) => [p.key.name, p.value]))),
    warn: () => undefined,
  };
  const d = new DeliveryTracker(delivery, undefined, { effects, now: () => clock.t }, place ?? undefined);
  return { d, upserts, clock };
}

const refusal = (fn: () => void) => {
  try {
    fn();
    return null;
  } catch (err) {
    return err instanceof ApplicationFailure ? { type: err.type, message: err.message } : err;
  }
};

test('started behind another of its key: queued from the start, saying which one it waits for, at no command', () => {
  const { d, upserts } = queued();
  expect(d.admitted).toBe(false);
  expect(d.status()).toMatchObject({
    state: 'queued',
    summary: `queued behind ${BEFORE} on the ordering key valve-7`,
    ordering: { key: 'valve-7', admitted: false, behind: BEFORE, blockedBy: null },
  });
  expect(upserts).toEqual([]);
});

test('its turn costs no search attribute update, nor does a notice while queued; told its place after it started (a batch), one', () => {
  const { d, upserts } = queued();
  d.noticed({ admit: false, behind: DEAD, blockedBy: { deliveryId: DEAD, outcome: 'rejected' } });
  expect(d.status().summary).toBe(
    `queued: its ordering key valve-7 is stopped by the dead letter ${DEAD} (rejected); it goes once that is redriven and delivered, or the key is released`,
  );
  d.noticed({ admit: true });
  expect(d.status()).toMatchObject({ state: 'pending', ordering: { admitted: true, behind: null, blockedBy: null } });
  // queued was the state at the start: no update for the notice, none for the turn
  expect(upserts).toEqual([]);
  // started without a place (by a batch), it is told it: the search attribute says queued
  const batched = queued(null);
  expect(batched.d.status().state).toBe('pending');
  batched.d.noticed({ admit: false, behind: BEFORE, blockedBy: null });
  expect(batched.upserts).toEqual([{ DeliveryState: 'queued' }]);
});

test('retry now is refused while queued; a pause is taken, and resumed it is queued again', () => {
  const { d, upserts } = queued();
  expect(refusal(() => d.checkRetryNow())).toEqual({
    type: 'NotWaiting',
    message: `the delivery is queued behind ${BEFORE} on its ordering key valve-7: it goes when every earlier one has ended`,
  });
  d.checkPause();
  d.pause('maintenance');
  expect(d.status()).toMatchObject({
    state: 'paused',
    summary: `paused: maintenance (queued behind ${BEFORE} on the ordering key valve-7)`,
  });
  d.resume();
  expect(d.status().state).toBe('queued');
  expect(upserts).toEqual([{ DeliveryState: 'paused' }, { DeliveryState: 'queued' }]);
});

test('a turn that comes after the deadline: expired at once, saying it was queued', () => {
  const { d, clock } = queued(null, { deadline: T0 + 60_000 });
  d.noticed({ admit: true });
  clock.t = T0 + 120_000;
  expect(d.expiredWhilePaused()).toMatchObject({
    outcome: 'expired',
    reason: `the deadline ${new Date(T0 + 60_000).toISOString()} passed while queued on its ordering key`,
  });
});

test('a delivery without a key is admitted from the start and shows nothing of ordering', () => {
  const delivery = validateDelivery(
    { kind: 'event', tenant: 'acme', device: 'd', target: 'https://example.com/in', payload: {} },
    { now: T0 },
  );
  const d = new DeliveryTracker(delivery, undefined, {
    effects: { details: () => undefined, upsert: () => undefined, warn: () => undefined },
  });
  expect(d.admitted).toBe(true);
  expect('ordering' in d.status()).toBe(false);
});
