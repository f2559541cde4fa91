import { EndpointAdmission, IN_FLIGHT, RATE } from '../../src/worker-services/admission';
import { Breaker } from '../../src/worker-services/breaker';
import { applySettings, checkSettingsChange, holdsOutages, limitsOf, parseRate } from '../../src/endpoints/controls';

// Per-endpoint limits: the settings an operator gives, and how one worker applies its share of them.

describe('endpoint settings', () => {
  test('rates in any unit, as attempts per second', () => {
    expect([parseRate('200'), parseRate('200/s'), parseRate('12000/min'), parseRate('36 / h'), parseRate('2.5/sec')]).toEqual([
      200, 200, 200, 0.01, 2.5,
    ]);
    expect([parseRate('fast'), parseRate('200/day'), parseRate('-1')]).toEqual([undefined, undefined, undefined]);
  });

  test('every bad field is named at once; off, numbers and null (the default again) are taken', () => {
    expect(checkSettingsChange({ maxInFlight: 2.5, rate: '200/day', burst: 3 }).problems).toEqual([
      {
        field: 'burst',
        message: 'is not a known field (known: maxInFlight, rate, breaker, probeEvery, autoDisableAfter, priority, outage)',
      },
      { field: 'maxInFlight', message: 'must be a whole number from 1 to 100000, "off", or null for the default; got 2.5' },
      {
        field: 'rate',
        message:
          'must be attempts per second above 0 (200, "200/s", "12000/min") up to 1000000, "off", or null for the default; got "200/day"',
      },
    ]);
    expect(checkSettingsChange({ maxInFlight: 'off', rate: '12000/min' })).toEqual({
      change: { maxInFlight: 'off', rate: 200 },
      problems: [],
    });
    expect(applySettings({ maxInFlight: 5, rate: 10 }, { rate: null, maxInFlight: 50 })).toEqual({ maxInFlight: 50 });
  });

  test("the outage setting: hold or off, null for the workers' default, which applies while the endpoint has none", () => {
    expect(checkSettingsChange({ outage: 'off' })).toEqual({ change: { outage: 'off' }, problems: [] });
    expect(checkSettingsChange({ outage: null })).toEqual({ change: { outage: null }, problems: [] });
    expect(checkSettingsChange({ outage: 'pause' }).problems).toEqual([
      { field: 'outage', message: 'must be "hold", "off", or null for the default; got "pause"' },
    ]);
    expect(holdsOutages(undefined, true)).toBe(true);
    expect(holdsOutages({ settings: {} }, false)).toBe(false);
    expect(holdsOutages({ settings: { outage: 'off' } }, true)).toBe(false);
    expect(holdsOutages({ settings: { outage: 'hold' } }, false)).toBe(true);
  });

  test("an endpoint's own limits win over the workers' default; off is none", () => {
    const defaults = { maxInFlight: 100, rate: 50 };
    expect(limitsOf({ maxInFlight: 'off' }, defaults)).toEqual({ maxInFlight: null, rate: 50 });
    expect(limitsOf(undefined, defaults)).toEqual(defaults);
  });
});

describe('EndpointAdmission: one worker takes its share of the limits', () => {
  const endpoint = 'ingest.example.com';

  test('the rate: slots reserved one after another, 1/rate apart at its share; short waits taken here', async () => {
    const admission = new EndpointAdmission({ defaults: { maxInFlight: null, rate: 200 }, share: () => 0.5 });
    const began = Date.now();
    const asked = await Promise.all(Array.from({ length: 100 }, () => admission.ask(endpoint)));
    const went = asked.filter((a) => a.go).length;
    const held = asked.filter((a): a is Extract<typeof a, { at: number }> => 'at' in a);
    // 200/s shared by two workers: 100/s here, one every 10 ms. Those due within LOCAL_WAIT_MS waited for it here
    expect(went).toBeGreaterThanOrEqual(40);
    expect(Date.now() - began).toBeGreaterThanOrEqual((went - 1) * 10);
    // the rest are told their own slots, in order and 10 ms apart: they do not come back together
    expect(held.length + went).toBe(100);
    expect(held.every((a) => a.reason === RATE)).toBe(true);
    const ats = held.map((a) => a.at);
    expect(ats.slice(1).map((at, i) => at - ats[i]!)).toEqual(held.slice(1).map(() => 10));
  });

  test('one that comes back at its reserved slot takes it without a new one', async () => {
    let now = 1_000_000;
    const admission = new EndpointAdmission({ defaults: { maxInFlight: null, rate: 1 }, now: () => now });
    expect((await admission.ask(endpoint)).go).toBe(true);
    const held = await admission.ask(endpoint);
    expect(held).toMatchObject({ go: false, at: now + 1000, reason: RATE });
    now += 1000;
    expect((await admission.ask(endpoint, { reserved: true })).go).toBe(true);
  });

  test('no slot before the delivery expires: told, not reserved', async () => {
    const now = 1_000_000;
    const admission = new EndpointAdmission({ defaults: { maxInFlight: null, rate: 1 }, now: () => now });
    await admission.ask(endpoint);
    const late = await admission.ask(endpoint, { notAfter: now + 500 });
    expect(late).toMatchObject({ go: false, at: now + 1000, reason: RATE });
    // the slot was not taken: the next asker gets it
    expect(await admission.ask(endpoint)).toMatchObject({ go: false, at: now + 1000 });
  });

  test('in flight: one waiting here goes when one ends; the rest get turns one after another as attempts end', async () => {
    const admission = new EndpointAdmission({ defaults: { maxInFlight: 2, rate: null }, share: () => 0.5 });
    const first = await admission.ask(endpoint);
    expect(first.go).toBe(true);
    expect(admission.inFlight(endpoint)).toBe(1);
    // one is this worker's share (of 2, for two workers): the next waits here for it
    const second = admission.ask(endpoint);
    const [third, fourth] = [await admission.ask(endpoint), await admission.ask(endpoint)];
    expect([third, fourth].map((a) => !a.go && a.reason)).toEqual([IN_FLIGHT, IN_FLIGHT]);
    expect('at' in third && 'at' in fourth && fourth.at > third.at).toBe(true);
    if (first.go) first.release(200);
    expect((await second).go).toBe(true);
    expect(admission.inFlight(endpoint)).toBe(1);
  });

  test('attempts let in together as others end still go out 1/rate apart', async () => {
    const admission = new EndpointAdmission({ defaults: { maxInFlight: 2, rate: 10 } });
    const [a, b] = [await admission.ask(endpoint), await admission.ask(endpoint)];
    const wentAt: number[] = [];
    // two more take their cells of the rate (100 ms apart), then wait here for a place in flight
    const waiting = [admission.ask(endpoint), admission.ask(endpoint)].map((asked) =>
      asked.then((admitted) => {
        wentAt.push(Date.now());
        return admitted;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 350));
    // both places come back at once: the two waiting do not go out together
    if (a.go && b.go) [a, b].forEach((admitted) => admitted.release(300));
    expect((await Promise.all(waiting)).map((admitted) => admitted.go)).toEqual([true, true]);
    expect(wentAt[1]! - wentAt[0]!).toBeGreaterThanOrEqual(95);
  });

  test("an endpoint's own control wins over the defaults, read before each ask", async () => {
    let control = { settings: { maxInFlight: 1 as const } };
    const admission = new EndpointAdmission({ defaults: { maxInFlight: 100, rate: null }, control: async () => control });
    expect(await admission.limits(endpoint)).toEqual({ maxInFlight: 1, rate: null });
    const one = await admission.ask(endpoint);
    expect(one.go).toBe(true);
    control = { settings: { maxInFlight: 'off' as never } };
    expect((await admission.ask(endpoint)).go).toBe(true);
  });
});

describe('Breaker: one probe at a time while the endpoint is failing', () => {
  const endpoint = 'ingest.example.com';
  const failed = (at: number) => ({ at, ok: false, class: 'server' as const, code: 'http-503' });
  const through = (at: number) => ({ at, ok: true, class: 'success' as const, code: 'http-202' });
  const ON = { settings: { breaker: 'on' as const } };

  test("this worker's own failures open it; one probe, none beside it, the next after probeEvery; the first success closes it", () => {
    let now = 1_000_000;
    const breaker = new Breaker('me', () => now);
    expect(breaker.call(endpoint, ON)).toBe('closed');
    for (let i = 0; i < 3; i++) breaker.attempted(endpoint, failed(now));
    // off unless the endpoint's settings turn it on
    expect([breaker.call(endpoint, undefined), breaker.call(endpoint, { settings: {} })]).toEqual(['closed', 'closed']);
    expect([breaker.call(endpoint, ON), breaker.call(endpoint, ON)]).toEqual(['probe', 'held']);
    breaker.attempted(endpoint, failed(now));
    breaker.probeEnded(endpoint);
    expect(breaker.call(endpoint, ON)).toBe('held');
    now += 1_000;
    expect(breaker.call(endpoint, ON)).toBe('probe');
    breaker.attempted(endpoint, through(now));
    breaker.probeEnded(endpoint);
    expect(breaker.call(endpoint, ON)).toBe('closed');
    // a client error is an answer: the endpoint is up
    for (let i = 0; i < 3; i++) breaker.attempted(endpoint, { at: now, ok: false, class: 'client', code: 'http-400' });
    expect(breaker.call(endpoint, ON)).toBe('closed');
  });

  test("the workflow's judgement: only the worker it names probes; a success here after it opened closes it here; off is off", () => {
    const now = 1_000_000;
    const open = (prober: string | null) => ({
      settings: { breaker: 'on' as const },
      breaker: { open: true, since: now - 10_000, prober },
    });
    const breaker = new Breaker('me', () => now);
    expect(breaker.call(endpoint, open('other'))).toBe('held');
    expect(breaker.call(endpoint, open('me'))).toBe('probe');
    breaker.attempted(endpoint, through(now));
    breaker.probeEnded(endpoint);
    expect(breaker.call(endpoint, open('me'))).toBe('closed');
    expect(new Breaker('me', () => now).call(endpoint, { ...open('other'), settings: { breaker: 'off' } })).toBe('closed');
    expect(new Breaker('me', () => now).call(endpoint, { ...open('other'), settings: {} })).toBe('closed');
  });
});
