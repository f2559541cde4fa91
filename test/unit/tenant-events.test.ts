import { DEAD_LETTER_WINDOW_MS, EndpointEvents, type DeadLetterTally } from '../../src/endpoints/operational-events';
import { SEEN_MS, TenantDeadLetters } from '../../src/endpoints/tenant-events';

// A tenant's dead letters across its endpoints, told per window (src/endpoints/tenant-events.ts): the state
// its workflow (src/workflows/tenant-events.ts) holds.

const T0 = Date.parse('2026-11-23T12:00:00Z');
const letters = (count: number, at: number, id: string): DeadLetterTally => ({
  count,
  outcomes: { rejected: count },
  first: { deliveryId: `${id}-first`, at },
  last: { deliveryId: `${id}-last`, at: at + count - 1 },
});

test('dead letters on 200 endpoints of one tenant over a minute: at most one event per window, whose counts add up', () => {
  const tenant = new TenantDeadLetters('acme');
  const told = [];
  // each endpoint's own events: the first at once, the rest a window later (EndpointEvents' rule)
  const endpoints = Array.from({ length: 200 }, (_, i) => ({
    name: `e${i}.example.com:443`,
    events: new EndpointEvents(`e${i}.example.com:443`),
  }));
  let endpointEvents = 0;
  for (let t = T0; t <= T0 + 60_000; t += 1_000) {
    for (const e of endpoints) {
      e.events.deadLettered(letters(1, t, `${e.name}-${t}`));
      for (const event of e.events.take(t)) {
        endpointEvents++;
        expect(tenant.report(reportOf(event.id, e.name, tallyOf(event.data)), t)).toBe(true);
      }
    }
    told.push(...tenant.take(t));
  }
  for (const e of endpoints)
    for (const event of e.events.take(T0 + 200_000)) tenant.report(reportOf(event.id, e.name, tallyOf(event.data)), T0 + 200_000);
  told.push(...tenant.take(T0 + 200_000));
  expect(endpointEvents).toBeGreaterThanOrEqual(400);
  expect(told.length).toBeLessThanOrEqual(Math.ceil(200_000 / DEAD_LETTER_WINDOW_MS) + 1);
  expect(told.reduce((n, e) => n + (e.data.count as number), 0)).toBe(200 * 61);
  const byEndpoint = told.map((e) => e.data.endpoints as Record<string, number>);
  expect(byEndpoint.reduce((n, m) => n + Object.values(m).reduce((a, b) => a + b, 0), 0)).toBe(200 * 61);
  expect(new Set(told.map((e) => e.id)).size).toBe(told.length);
  expect(told.every((e) => e.type === 'deliveries.dead-lettered' && e.data.tenant === 'acme')).toBe(true);
});

test('a report repeated (a retried activity) is counted once, also in the next run; an aggregator ends only once repeats are past', () => {
  const tenant = new TenantDeadLetters('acme');
  const report = reportOf('worker-1/1', 'e', letters(5, T0, 'd'));
  expect(tenant.report(report, T0)).toBe(true);
  const next = new TenantDeadLetters('acme', tenant.carried());
  expect(next.report(report, T0 + 1_000)).toBe(false);
  expect(next.wakeAt(T0 + 1_000)).toBeLessThanOrEqual(T0 + 1_000); // the first: at once
  expect(next.take(T0 + 1_000).map((e) => e.data.count)).toEqual([5]);
  expect(next.idle(T0 + 2_000)).toBe(false);
  // nothing due: it wakes only to forget the report, and then may end
  expect(next.wakeAt(T0 + 2_000)).toBe(T0 + SEEN_MS);
  expect(next.idle(T0 + SEEN_MS)).toBe(true);
  expect(next.wakeAt(T0 + SEEN_MS)).toBeNull();
});

const reportOf = (id: string, endpoint: string, tally: DeadLetterTally) => ({ id, tally, endpoints: { [endpoint]: tally.count } });

function tallyOf(data: Record<string, unknown>): DeadLetterTally {
  const at = (iso: unknown) => Date.parse(iso as string);
  return {
    count: data.count as number,
    outcomes: data.outcomes as DeadLetterTally['outcomes'],
    first: { deliveryId: data.firstDeliveryId as string, at: at(data.since) },
    last: { deliveryId: data.lastDeliveryId as string, at: at(data.until) },
  };
}
