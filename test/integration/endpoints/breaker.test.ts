import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import { eventsTo } from '../../support/messages';
import { mostInFlight, mostInWindow, startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/*
 * The circuit breaker (docs/endpoint-health.md, "Circuit breaker"), against the retry budget alone, in the
 * same run and on two workers: two endpoints down for the same time, 60 deliveries each, one with the
 * breaker on and limits, one with the breaker off (the default). The receivers' own logs are the evidence.
 */

const DOWN_MS = 20_000;
const DELIVERIES = 60;
const LIMITS = { maxInFlight: 5, rate: 20, breaker: 'on' } as const;

let h: Harness;
let other: Harness;
let guarded: Receiver;
let budgetOnly: Receiver;
let down = true;

beforeAll(async () => {
  const taskQueue = `test-breaker-${randomUUID()}`;
  [h, other, guarded, budgetOnly] = await Promise.all([
    startHarness(testAddress(), { taskQueue }),
    startHarness(testAddress(), { taskQueue }),
    startReceiver(),
    startReceiver(),
  ]);
  for (const r of [guarded, budgetOnly]) r.route('/in', () => ({ status: down ? 503 : 202, delayMs: 50 }));
});
afterAll(async () => {
  await Promise.all([h?.stop(), other?.stop()]);
  await Promise.all([guarded?.close(), budgetOnly?.close()]);
});

// retried every 0.1–2 s: without a breaker, the retry budget (10/s) is what bounds them while down
const deliveries = (receiver: Receiver, device: string): DeliveryInput[] =>
  eventsTo(receiver.url, device, DELIVERIES, { initial: '100ms', min: '100ms', max: '2s' });

test('while down, requests fall to the probe rate, one at a time; after recovery, everything drains within the limits', async () => {
  await h.redeliver.endpoint(guarded.url).set(LIMITS);
  await h.redeliver.endpoint(budgetOnly.url).set({ breaker: 'off' });
  const device = `breaker-${randomUUID().slice(0, 8)}`;
  const [a, b] = [deliveries(guarded, `${device}-a`), deliveries(budgetOnly, `${device}-b`)];
  // both endpoints' deliveries in turn; the outage lasts DOWN_MS after the last is submitted
  const handles = await h.redeliver.submitMany(a.flatMap((input, i) => [input, b[i]!]));
  const submittedAt = Date.now();
  // the endpoint's workflow judges it failing from the workers' reports, and names the one worker that probes
  const judged = await waitFor(
    () => h.redeliver.endpoint(guarded.url).control(),
    (c) => c.breaker?.open === true,
    DOWN_MS,
  );
  const judgedAt = Date.now();
  await new Promise((r) => setTimeout(r, Math.max(0, DOWN_MS - (judgedAt - submittedAt))));
  down = false;
  const upAt = Date.now();
  const results = await Promise.all(handles.map((handle) => handle.result()));

  expect(results.filter((r) => r.outcome === 'delivered')).toHaveLength(2 * DELIVERIES);
  const whileDown = (r: Receiver, from = 0) => r.requests.filter((q) => q.startedAt >= from && q.startedAt < upAt);
  const [g, o] = [whileDown(guarded), whileDown(budgetOnly)];
  // once judged (before, each worker probes on its own), against the budget alone over the same seconds
  const [gJudged, oJudged] = [whileDown(guarded, judgedAt), whileDown(budgetOnly, judgedAt)];
  // each worker's breaker opens after three failures of its own; once the endpoint's workflow has judged it failing
  // (seconds later), only the worker it names probes: one probe a second (probeEvery's default), never two at once
  const ratio = gJudged.length / oJudged.length;
  const seconds = (upAt - judgedAt) / 1000;
  console.log(
    `requests while down: breaker ${g.length}, budget only ${o.length} (${(g.length / o.length).toFixed(3)}); ` +
      `once judged, over ${seconds.toFixed(1)} s: ${gJudged.length} vs ${oJudged.length} (${ratio.toFixed(3)})`,
  );
  expect(gJudged.length).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
  expect(ratio).toBeLessThan(0.25);
  expect([h.reporter!.identity, other.reporter!.identity]).toContain(judged.breaker!.prober);
  // every worker reads it within CONTROL_TTL_MS (2 s): from then on, one probe at a time
  expect(mostInFlight(g.filter((q) => q.startedAt > judgedAt + 3_000))).toBeLessThanOrEqual(1);
  const after = guarded.requests.filter((q) => q.startedAt >= upAt);
  expect(mostInFlight(after)).toBeLessThanOrEqual(LIMITS.maxInFlight);
  expect(mostInWindow(after, 1_000)).toBeLessThanOrEqual(LIMITS.rate);
}, 180_000);
