import {
  endpointDowntimeReport,
  KEPT_ENDPOINT_PERIODS,
  openEndpointLedger,
  recordOutcomes,
  type EndpointLedger,
} from '../../src/endpoints/downtime';
import { endpointTimelineFigure } from '../../src/plot/endpoints';
import { addToTimeline, KEPT_SECONDS } from '../../src/endpoints/timeline';
import type { AttemptOutcome } from '../../src/endpoints/types';
import { renderFigure } from '../../src/plot';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const s = (n: number) => T0 + Math.round(n * 1000);
const iso = (n: number) => new Date(s(n)).toISOString();

const ok = (t: number): AttemptOutcome => ({ at: s(t), ok: true, class: 'success', code: 'ok' });
const server = (t: number, code = 'http-500'): AttemptOutcome => ({ at: s(t), ok: false, class: 'server', code });
const throttled = (t: number): AttemptOutcome => ({ at: s(t), ok: false, class: 'well-known', code: 'http-429' });
const conn = (t: number, code = 'net-ECONNREFUSED'): AttemptOutcome => ({ at: s(t), ok: false, class: 'connection', code });
const client = (t: number): AttemptOutcome => ({ at: s(t), ok: false, class: 'client', code: 'http-400' });

const ledgerOf = (outcomes: AttemptOutcome[], openAt = 0): EndpointLedger => recordOutcomes(openEndpointLedger({}, s(openAt)), outcomes);

describe('endpoint downtime, as the guide defines it', () => {
  test('a spell longer than the threshold counts whole, with what was tried; a shorter one is a glitch', () => {
    const l = ledgerOf([ok(1), server(10), ok(70), server(100, 'http-503'), throttled(130), server(140, 'http-503'), ok(161)]);
    expect(endpointDowntimeReport(l, s(200))).toEqual({
      thresholdMs: 60_000,
      reconnectWindowMs: 180_000,
      reconnectAttempts: 3,
      since: iso(0),
      totalMs: 61_000,
      periods: [{ from: iso(100), to: iso(161), durationMs: 61_000, attempts: 4, failures: 3, reason: 'http-503' }],
      glitches: 1,
      reconnections: 0,
      current: null,
      complete: true,
    });
  });

  test('repeated successes make no spell', () => {
    const r = endpointDowntimeReport(ledgerOf([ok(1), ok(1), ok(2), ok(500)]), s(600));
    expect(r).toMatchObject({ totalMs: 0, periods: [], glitches: 0, reconnections: 0, current: null });
  });

  test('a ledger that opens with failures: the spell starts at the first failure, not at the opening', () => {
    const l = ledgerOf([server(5), server(50)]);
    expect(endpointDowntimeReport(l, s(70)).current).toEqual({
      since: iso(5),
      durationMs: 65_000,
      attempts: 2,
      failures: 2,
      reason: 'http-500',
      countsAsDowntime: true,
    });
    expect(endpointDowntimeReport(recordOutcomes(l, [ok(100)]), s(100)).periods).toEqual([
      expect.objectContaining({ from: iso(5), to: iso(100), durationMs: 95_000 }),
    ]);
  });

  test('a client error ends a spell (the endpoint answered) and starts none', () => {
    const l = ledgerOf([server(0), client(30), client(40), server(50), client(200)]);
    const r = endpointDowntimeReport(l, s(300));
    expect(r.glitches).toBe(1);
    expect(r.periods).toEqual([expect.objectContaining({ from: iso(50), to: iso(200), durationMs: 150_000, attempts: 2, failures: 1 })]);
    expect(r.current).toBeNull();
  });

  describe('reconnection: only connection failures, at least 3 attempts, within 3 min', () => {
    test.each<[string, AttemptOutcome[], 'reconnections' | 'downtime' | 'glitches']>([
      ['exactly 3 attempts in exactly 180 s', [conn(0), conn(60), ok(180)], 'reconnections'],
      ['a millisecond over 180 s', [conn(0), conn(60), ok(180.001)], 'downtime'],
      ['only 2 attempts', [conn(0), ok(90)], 'downtime'],
      ['a server error among connection failures', [conn(0), server(30), conn(60), ok(120)], 'downtime'],
      ['throttled among connection failures', [conn(0), throttled(30), ok(120)], 'downtime'],
      ['within the threshold it is a glitch first', [conn(0), conn(30), ok(60)], 'glitches'],
    ])('%s', (_name, outcomes, expected) => {
      const r = endpointDowntimeReport(ledgerOf(outcomes), s(1_000));
      expect({ downtime: r.periods.length, reconnections: r.reconnections, glitches: r.glitches }).toEqual({
        downtime: 0,
        reconnections: 0,
        glitches: 0,
        [expected]: 1,
      });
    });

    test('the options change the rule', () => {
      const l = recordOutcomes(openEndpointLedger({ thresholdMs: 10_000, reconnectWindowMs: 30_000, reconnectAttempts: 2 }, s(0)), [
        conn(0),
        ok(20),
        conn(100),
        ok(131),
      ]);
      const r = endpointDowntimeReport(l, s(200));
      expect(r).toMatchObject({ thresholdMs: 10_000, reconnectWindowMs: 30_000, reconnectAttempts: 2, reconnections: 1, totalMs: 31_000 });
    });
  });

  test('the spell going on counts once longer than the threshold and no longer a possible reconnection', () => {
    const connecting = ledgerOf([ok(0), conn(10)]);
    // a single attempt so far: more may come and make it a reconnection
    expect(endpointDowntimeReport(connecting, s(190))).toMatchObject({
      totalMs: 0,
      current: { durationMs: 180_000, countsAsDowntime: false },
    });
    expect(endpointDowntimeReport(connecting, s(190.001))).toMatchObject({ totalMs: 180_001, current: { countsAsDowntime: true } });

    const failing = ledgerOf([ok(0), server(10)]);
    expect(endpointDowntimeReport(failing, s(70)).current?.countsAsDowntime).toBe(false);
    expect(endpointDowntimeReport(failing, s(71))).toMatchObject({
      totalMs: 61_000,
      current: { countsAsDowntime: true, reason: 'http-500' },
    });
  });

  test('the reason is the most frequent failure code, the first seen on a tie', () => {
    const l = ledgerOf([
      conn(0, 'net-ECONNRESET'),
      server(10, 'http-502'),
      server(20, 'http-502'),
      conn(30, 'net-ECONNRESET'),
      server(40, 'http-503'),
    ]);
    expect(endpointDowntimeReport(l, s(100)).current?.reason).toBe('net-ECONNRESET');
    expect(endpointDowntimeReport(recordOutcomes(l, [server(50, 'http-502')]), s(100)).current?.reason).toBe('http-502');
  });

  test('times that go backwards are clamped: a spell never has a negative duration', () => {
    // successes reported late, from before the failure: they do not end the spell that began after them
    const l = ledgerOf([server(50), ok(45), ok(10)], 20);
    expect(l.lastAt).toBe(s(50));
    expect(endpointDowntimeReport(l, s(60))).toMatchObject({ glitches: 0, totalMs: 0, current: { since: iso(50), durationMs: 10_000 } });
    // a failure reported late, from before a success: it opens no spell that nothing would close
    expect(endpointDowntimeReport(ledgerOf([ok(100), server(99)], 20), s(200))).toMatchObject({ current: null, totalMs: 0 });
    // before the ledger opened
    expect(endpointDowntimeReport(ledgerOf([server(5)], 20), s(30)).current).toMatchObject({ since: iso(20), durationMs: 10_000 });
    // a report at a `now` before the spell began
    expect(endpointDowntimeReport(ledgerOf([server(100)]), s(90)).current?.durationMs).toBe(0);
  });

  test('plain data: unchanged inputs, and a JSON round trip (continue-as-new) goes on the same', () => {
    const first = ledgerOf([ok(0), server(10)]);
    const frozen = JSON.stringify(first);
    const next = [server(40), ok(100)];
    const direct = recordOutcomes(first, next);
    expect(JSON.stringify(first)).toBe(frozen);
    expect(recordOutcomes(JSON.parse(frozen) as EndpointLedger, next)).toEqual(direct);
    // batch boundaries do not matter
    expect(recordOutcomes(recordOutcomes(openEndpointLedger({}, s(0)), [ok(0)]), [server(10), server(40), ok(100)])).toEqual(direct);
  });

  test('old periods are dropped but still counted; a report from before them says it is incomplete', () => {
    const outcomes = Array.from({ length: KEPT_ENDPOINT_PERIODS + 5 }, (_, i) => [server(i * 100), ok(i * 100 + 70)]).flat();
    const l = ledgerOf(outcomes);
    expect(l.periods).toHaveLength(KEPT_ENDPOINT_PERIODS);
    const all = endpointDowntimeReport(l, s(100_000));
    expect(all).toMatchObject({ totalMs: (KEPT_ENDPOINT_PERIODS + 5) * 70_000, complete: false });
    expect(all.periods).toHaveLength(KEPT_ENDPOINT_PERIODS);
    expect(endpointDowntimeReport(l, s(100_000), s(400)).complete).toBe(false);
    const recent = endpointDowntimeReport(l, s(100_000), s(470));
    expect(recent).toMatchObject({ complete: true, totalMs: KEPT_ENDPOINT_PERIODS * 70_000 });
  });

  test('invalid options are refused by name; undefined ones take the default', () => {
    expect(() => openEndpointLedger({ thresholdMs: -1 }, s(0))).toThrow('thresholdMs must be a finite number of ms ≥ 0, got -1');
    expect(() => openEndpointLedger({ reconnectWindowMs: Infinity }, s(0))).toThrow('reconnectWindowMs');
    expect(() => openEndpointLedger({ reconnectAttempts: 2.5 }, s(0))).toThrow('reconnectAttempts must be a whole number ≥ 1, got 2.5');
    expect(() => openEndpointLedger({}, NaN)).toThrow('at must be a time in epoch ms');
    expect(openEndpointLedger({ thresholdMs: undefined }, s(0)).thresholdMs).toBe(60_000);
  });
});

describe('endpoint downtime since a time', () => {
  const l = ledgerOf([server(100), ok(200), server(300), ok(400), server(500)]);

  test('periods ending before it are left out, one straddling it is clipped; totals are what is reported', () => {
    const r = endpointDowntimeReport(l, s(600), s(150));
    expect(r.since).toBe(iso(150));
    expect(r.periods).toEqual([
      { from: iso(150), to: iso(200), durationMs: 50_000, attempts: 2, failures: 1, reason: 'http-500' },
      { from: iso(300), to: iso(400), durationMs: 100_000, attempts: 2, failures: 1, reason: 'http-500' },
    ]);
    expect(r.totalMs).toBe(50_000 + 100_000 + 100_000);
    expect(endpointDowntimeReport(l, s(600), s(200)).periods.map((p) => p.from)).toEqual([iso(300)]);
  });

  test('the current spell counts from `since` in the total, and is described whole', () => {
    const r = endpointDowntimeReport(l, s(600), s(550));
    expect(r).toMatchObject({ periods: [], totalMs: 50_000, current: { since: iso(500), durationMs: 100_000, countsAsDowntime: true } });
  });

  test('a `since` before the ledger opened is the opening', () => {
    expect(endpointDowntimeReport(l, s(600), s(-100))).toEqual(endpointDowntimeReport(l, s(600)));
  });
});

describe('timeline', () => {
  test('per second: ok counts successes, failed every other attempt, client errors too; merged and sorted', () => {
    const first = addToTimeline([], [ok(10.2), server(10.9), ok(12)]);
    expect(first).toEqual([
      { second: s(10) / 1000, ok: 1, failed: 1 },
      { second: s(12) / 1000, ok: 1, failed: 0 },
    ]);
    const frozen = JSON.stringify(first);
    const merged = addToTimeline(first, [client(12.5), ok(11), conn(9), ok(12.99), throttled(30)]);
    expect(merged).toEqual([
      { second: s(9) / 1000, ok: 0, failed: 1 },
      { second: s(10) / 1000, ok: 1, failed: 1 },
      { second: s(11) / 1000, ok: 1, failed: 0 },
      { second: s(12) / 1000, ok: 2, failed: 1 },
      { second: s(30) / 1000, ok: 0, failed: 1 },
    ]);
    expect(JSON.stringify(first)).toBe(frozen);
  });

  test('keeps the most recent seconds up to the cap', () => {
    const many = addToTimeline(
      [],
      Array.from({ length: KEPT_SECONDS + 10 }, (_, i) => ok(i)),
    );
    expect(many).toHaveLength(KEPT_SECONDS);
    expect(many[0]?.second).toBe(s(10) / 1000);
    const capped = addToTimeline(many, [server(5_000)], 3);
    expect(capped.map((b) => b.second)).toEqual([s(KEPT_SECONDS + 8) / 1000, s(KEPT_SECONDS + 9) / 1000, s(5_000) / 1000]);
    expect(addToTimeline(many, [], 0)).toEqual([]);
    expect(() => addToTimeline([], [], -1)).toThrow('cap must be a whole number ≥ 0, got -1');
  });
});

describe('endpointTimelineFigure', () => {
  const outcomes = [ok(0), ok(0.5), server(10), server(40), ok(80), server(100), ok(110), conn(150), conn(200), ok(240)];
  const report = endpointDowntimeReport(ledgerOf(outcomes), s(300));
  const timeline = addToTimeline([], outcomes);
  const downtimeBand = /<path d="[^"]+Z" fill="#000000" fill-opacity="0.22"/g;

  test('renders attempts per second with the downtime period shaded, and not the glitch', () => {
    expect(report).toMatchObject({ glitches: 1, periods: [expect.objectContaining({ durationMs: 70_000 })] });
    const svg = renderFigure(endpointTimelineFigure({ endpoint: 'hub.example.com:8883', timeline, report }));
    for (const words of [
      'hub.example.com:8883: attempts per second and downtime',
      '>ok<',
      '>failed<',
      '>downtime<',
      '>attempts per second<',
    ]) {
      expect(svg).toContain(words);
    }
    expect(svg.match(downtimeBand)).toHaveLength(1);
  });

  test('a window leaves out what is outside it; a spell going on that counts is shaded too', () => {
    const going = endpointDowntimeReport(ledgerOf([...outcomes, server(250)]), s(400));
    const svg = renderFigure(endpointTimelineFigure({ endpoint: 'e', timeline, report: going, from: s(200), to: s(400) }));
    expect(svg.match(downtimeBand)).toHaveLength(1);
    expect(svg).toContain('one of them going on');
  });

  test('renders with nothing to show', () => {
    const empty = endpointDowntimeReport(openEndpointLedger({}, s(0)), s(0));
    expect(renderFigure(endpointTimelineFigure({ endpoint: 'idle', timeline: [], report: empty }))).toContain(
      'idle: attempts per second and downtime',
    );
  });
});
