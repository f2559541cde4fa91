import type { EndpointControl } from '../../src/endpoints/controls';
import type { AttemptOutcome } from '../../src/endpoints/types';
import { HEALTHY_AFTER_MS, Pacer, type PaceSlot } from '../../src/worker-services/pacer';

const E = 'ingest.example.com';

/** A pacer on a clock the test moves. */
function pacerAt(options: ConstructorParameters<typeof Pacer>[2] = {}) {
  let t = 1_000_000;
  const pacer = new Pacer('worker-a', () => t, options);
  return { pacer, advance: (ms: number) => (t += ms), now: () => t };
}

/** Lets the pacer's pending asks (each reads the endpoint's control first) reach their line. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const ok = (at: number): AttemptOutcome => ({ at, ok: true, class: 'success', code: 'ok' });
const down = (at: number): AttemptOutcome => ({ at, ok: false, class: 'server', code: 'http-503' });

/** A slot, failing the test when the pacer answers with a wait instead. */
async function slot(pacer: Pacer, signal?: AbortSignal): Promise<PaceSlot> {
  const got = await pacer.acquire(E, signal);
  if ('waitMs' in got) throw new Error(`expected a slot, got a wait of ${got.waitMs} ms`);
  return got;
}

/** Fails the endpoint (three failures in a row, as every worker hears them) and gets it back through a probe. */
async function failThenRecover(t: ReturnType<typeof pacerAt>): Promise<void> {
  for (let i = 0; i < 3; i++) t.pacer.attempted(E, down(t.now()));
  expect(t.pacer.state(E)).toBe('failing');
  const probe = await slot(t.pacer);
  expect(probe.probe).toBe(true);
  t.advance(20);
  t.pacer.attempted(E, ok(t.now()));
  probe.sent(ok(t.now()), 20);
}

/** Sends `n` held messages that succeed in `latencyMs`, one at a time. */
async function succeed(t: ReturnType<typeof pacerAt>, n: number, latencyMs = 20): Promise<void> {
  for (let i = 0; i < n; i++) {
    const s = await slot(t.pacer);
    t.advance(latencyMs);
    t.pacer.attempted(E, ok(t.now()));
    s.sent(ok(t.now()), latencyMs);
  }
}

test('an endpoint it knows nothing of is healthy, with the whole cap', () => {
  const { pacer } = pacerAt({ maxInFlight: 8 });
  expect(pacer.describe(E)).toMatchObject({ state: 'healthy', window: 8, inFlight: 0, cap: 8 });
  expect(pacer.holds(E)).toBe(false);
});

test('a lone failure is the message’s own; two in a row hold; three close the endpoint to probes', () => {
  const t = pacerAt();
  t.pacer.attempted(E, down(t.now()));
  expect(t.pacer.holds(E)).toBe(false);
  t.pacer.attempted(E, down(t.now()));
  expect(t.pacer.holds(E)).toBe(true);
  expect(t.pacer.state(E)).toBe('healthy');
  t.pacer.attempted(E, down(t.now()));
  expect(t.pacer.describe(E)).toMatchObject({ state: 'failing', window: 0 });
  expect(t.pacer.describe(E).why).toMatch(/^failing: 3 failures in a row \(http-503\).*one probe at a time, at most one per 1 s$/);
  // a success ends the spell: a lone failure afterwards holds nothing
  const t2 = pacerAt();
  t2.pacer.attempted(E, down(t2.now()));
  t2.pacer.attempted(E, ok(t2.now()));
  t2.pacer.attempted(E, down(t2.now()));
  expect(t2.pacer.holds(E)).toBe(false);
});

test('a spell that lasts 5 s is failing by time alone, as the breaker judges it', () => {
  const t = pacerAt();
  t.pacer.attempted(E, down(t.now()));
  t.advance(4_999);
  expect(t.pacer.state(E)).toBe('healthy');
  t.advance(1);
  expect(t.pacer.state(E)).toBe('failing');
});

test('while failing: one probe at a time, at most one per probeEvery (the endpoint’s setting)', async () => {
  const control: EndpointControl = { settings: { probeEvery: 2_000 } };
  const t = pacerAt({ control: () => Promise.resolve(control) });
  for (let i = 0; i < 3; i++) t.pacer.attempted(E, down(t.now()));
  const probe = await slot(t.pacer);
  expect(probe.probe).toBe(true);
  // a second ask while the probe is out: wait
  expect(await t.pacer.acquire(E)).toEqual({ waitMs: 2_000 });
  t.advance(300);
  t.pacer.attempted(E, down(t.now()));
  probe.sent(down(t.now()), 300);
  // the next probe is due probeEvery after the last one went
  expect(await t.pacer.acquire(E)).toEqual({ waitMs: 1_700 });
  t.advance(1_700);
  expect((await slot(t.pacer)).probe).toBe(true);
});

test('a probe slot given back unused (its message expired in the hold, or the limits held it) was no probe: the next message probes now', async () => {
  const t = pacerAt();
  for (let i = 0; i < 3; i++) t.pacer.attempted(E, down(t.now()));
  const first = await slot(t.pacer);
  first.sent(null);
  const next = await slot(t.pacer);
  expect(next.probe).toBe(true);
  // one that went counts: the one after waits its probeEvery
  t.advance(100);
  next.sent(down(t.now()), 100);
  expect(await t.pacer.acquire(E)).toEqual({ waitMs: 900 });
});

test('a probe that gets through opens a window of one, which grows while it succeeds (slow start, then additive)', async () => {
  const t = pacerAt({ maxInFlight: 32 });
  await failThenRecover(t);
  const after = t.pacer.describe(E);
  expect(after.state).toBe('recovering');
  expect(after.window).toBe(2);
  expect(after.why).toBe('slow start: doubling while it succeeds');
  // slow start up to the cap: the outage said nothing of what the endpoint takes once back
  await succeed(t, 14);
  expect(t.pacer.describe(E)).toMatchObject({ window: 16, why: 'slow start: doubling while it succeeds' });
  await succeed(t, 16);
  expect(t.pacer.describe(E)).toMatchObject({ window: 32, cap: 32 });
  expect(t.pacer.describe(E).why).toMatch(/^at its cap of 32/);
});

test('after a failure while it answers, the window halves and grows by one per window of successes (additive increase)', async () => {
  const t = pacerAt({ maxInFlight: 32 });
  await failThenRecover(t);
  await succeed(t, 30);
  const s = await slot(t.pacer);
  t.advance(20);
  s.sent(down(t.now()), 20);
  expect(t.pacer.describe(E).window).toBe(16);
  await succeed(t, 15);
  expect(t.pacer.describe(E).window).toBe(16);
  await succeed(t, 1);
  expect(t.pacer.describe(E)).toMatchObject({ window: 17, why: 'additive increase: one more per window of successes' });
});

test('the window never passes the cap: the worker’s, or its share of the endpoint’s own max-in-flight', async () => {
  const control: EndpointControl = { settings: { maxInFlight: 12 } };
  const t = pacerAt({ maxInFlight: 32, control: () => Promise.resolve(control), share: () => 0.5 });
  await failThenRecover(t);
  await succeed(t, 50);
  expect(t.pacer.describe(E)).toMatchObject({ state: 'recovering', window: 6, cap: 6 });
  expect(t.pacer.describe(E).why).toMatch(/^at its cap of 6/);
  // six in flight, the seventh waits
  const slots = await Promise.all(Array.from({ length: 6 }, () => slot(t.pacer)));
  let seventh = false;
  void t.pacer.acquire(E).then(() => (seventh = true));
  await settle();
  expect(seventh).toBe(false);
  expect(t.pacer.describe(E).inFlight).toBe(6);
  slots[0]!.sent(ok(t.now()), 20);
  await settle();
  expect(seventh).toBe(true);
});

test('at its cap without a failure for a while, it is healthy again', async () => {
  const t = pacerAt({ maxInFlight: 4 });
  await failThenRecover(t);
  // from 2, slow start to its cap: 4 after two successes
  await succeed(t, 2);
  expect(t.pacer.describe(E).window).toBe(4);
  t.advance(HEALTHY_AFTER_MS - 1);
  expect(t.pacer.state(E)).toBe('recovering');
  t.advance(1);
  expect(t.pacer.describe(E)).toMatchObject({ state: 'healthy', window: 4 });
});

test('a failure halves the window, once per round trip', async () => {
  const t = pacerAt({ maxInFlight: 32 });
  await failThenRecover(t);
  await succeed(t, 14);
  expect(t.pacer.describe(E).window).toBe(16);
  const out = await Promise.all(Array.from({ length: 4 }, () => slot(t.pacer)));
  t.advance(20);
  t.pacer.attempted(E, down(t.now()));
  out[0]!.sent(down(t.now()), 20);
  expect(t.pacer.describe(E)).toMatchObject({ state: 'recovering', window: 8 });
  expect(t.pacer.describe(E).why).toMatch(/^halved: http-503 at /);
  // sent before the cut: their failures do not halve it again
  t.pacer.attempted(E, ok(t.now()));
  out[1]!.sent(down(t.now()), 20);
  expect(t.pacer.describe(E).window).toBe(8);
  out[2]!.sent(null);
  out[3]!.sent(null);
  // after the cut: additive increase from there
  await succeed(t, 8);
  expect(t.pacer.describe(E).window).toBe(9);
});

test('a smoothed latency well above its best (twice, and 250 ms more) stops the growth; a worker’s own jitter does not', async () => {
  const t = pacerAt();
  await failThenRecover(t);
  await succeed(t, 3, 20);
  // 120 ms: six times the best, but within the slack: a busy worker, not a queueing endpoint
  await succeed(t, 3, 120);
  const before = t.pacer.describe(E).window;
  expect(before).toBe(2 + 6);
  // the first 2 s send takes the average (53 ms) past 270 ms: no growth from there
  await succeed(t, 3, 2_000);
  const held = t.pacer.describe(E);
  expect(held.window).toBe(before);
  expect(held.why).toMatch(/^latency \d+ ms on average, over 2× its best \(20 ms\) and 250 ms more: the window holds$/);
  // fast again: the average comes down, and the window grows again
  await succeed(t, 30, 20);
  expect(t.pacer.describe(E).window).toBeGreaterThan(held.window);
});

test('those waiting for a slot are served in the order they asked', async () => {
  const t = pacerAt({ maxInFlight: 32 });
  await failThenRecover(t);
  // the window is 2
  const [a, b] = [await slot(t.pacer), await slot(t.pacer)];
  const served: string[] = [];
  const waiting = ['first', 'second', 'third'].map((name) => t.pacer.acquire(E).then((s) => (served.push(name), s as PaceSlot)));
  await settle();
  expect(served).toEqual([]);
  a.sent(null);
  b.sent(null);
  await settle();
  expect(served).toEqual(['first', 'second']);
  (await waiting[0]!).sent(null);
  await settle();
  expect(served).toEqual(['first', 'second', 'third']);
});

test('turning failing tells those waiting when to ask again', async () => {
  const t = pacerAt();
  await failThenRecover(t);
  await Promise.all([slot(t.pacer), slot(t.pacer)]);
  const waiting = t.pacer.acquire(E);
  await settle();
  for (let i = 0; i < 3; i++) t.pacer.attempted(E, down(t.now()));
  await expect(waiting).resolves.toEqual({ waitMs: 1_000 });
});

test('an abort takes a waiter out of the line, and the next one gets the slot', async () => {
  const t = pacerAt();
  await failThenRecover(t);
  const held = await Promise.all([slot(t.pacer), slot(t.pacer)]);
  const abort = new AbortController();
  const gone = t.pacer.acquire(E, abort.signal);
  const next = t.pacer.acquire(E);
  await settle();
  abort.abort(new Error('activity cancelled'));
  await expect(gone).rejects.toThrow('activity cancelled');
  held[0]!.sent(null);
  await expect(next).resolves.toMatchObject({ probe: false });
  expect(t.pacer.describe(E).inFlight).toBe(2);
  // an aborted signal gets nothing
  await expect(t.pacer.acquire(E, abort.signal)).rejects.toThrow('activity cancelled');
});

test('when the breaker names another worker as its prober, this one sends no probe', async () => {
  const control: EndpointControl = { settings: { breaker: 'on' }, breaker: { open: true, since: 1, prober: 'worker-b' } };
  const t = pacerAt({ control: () => Promise.resolve(control) });
  for (let i = 0; i < 3; i++) t.pacer.attempted(E, down(t.now()));
  expect(await t.pacer.acquire(E)).toEqual({ waitMs: 1_000 });
});

test('changes are told (the metrics): the state and the window', async () => {
  const seen: string[] = [];
  const t = pacerAt({ maxInFlight: 4, changed: (_e, v) => seen.push(`${v.state} ${v.window}`) });
  await failThenRecover(t);
  expect(seen).toEqual(['failing 0', 'recovering 1', 'recovering 2']);
});
