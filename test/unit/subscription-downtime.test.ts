import { commandStatusOf, parseCommandTopic } from '../../src/subscription/command';
import { downtimeReport, KEPT_PERIODS, markDown, markUp, openLedger } from '../../src/subscription/downtime';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const s = (n: number) => T0 + n * 1000;

describe('downtime, as the guide defines it', () => {
  test('a spell longer than the threshold counts whole; a shorter one not at all', () => {
    let l = openLedger(60_000, s(0));
    l = markUp(l, s(2)); // subscribed after 2 s: reconnection, not downtime
    l = markDown(l, s(100), 'connection lost');
    l = markUp(l, s(100 + 59)); // 59 s
    l = markDown(l, s(300), 'broker shutting down');
    l = markUp(l, s(300 + 61)); // 61 s: all of it is downtime
    const r = downtimeReport(l, s(400));
    expect(r).toEqual({
      thresholdMs: 60_000,
      since: new Date(s(0)).toISOString(),
      totalMs: 61_000,
      periods: [
        { from: new Date(s(300)).toISOString(), to: new Date(s(361)).toISOString(), durationMs: 61_000, reason: 'broker shutting down' },
      ],
      current: null,
      outages: 2,
    });
  });

  test('the spell going on counts once it passes the threshold', () => {
    let l = markUp(openLedger(60_000, s(0)), s(1));
    l = markDown(l, s(10), 'connection lost');
    expect(downtimeReport(l, s(70))).toMatchObject({
      totalMs: 0,
      current: { durationMs: 60_000, countsAsDowntime: false, reason: 'connection lost' },
    });
    expect(downtimeReport(l, s(71))).toMatchObject({ totalMs: 61_000, current: { durationMs: 61_000, countsAsDowntime: true } });
  });

  test('not subscribed yet counts too; losing it twice keeps the first cause; a renewal is no outage', () => {
    let l = openLedger(1_000, s(0));
    l = markDown(l, s(1), 'ignored: down already');
    l = markUp(l, s(5));
    expect(downtimeReport(l, s(5)).periods).toEqual([expect.objectContaining({ reason: 'not subscribed yet', durationMs: 5_000 })]);
    l = markDown(l, s(6), 'renewing', false);
    expect(l.outages).toBe(0);
    l = markUp(l, s(6.5));
    expect(l.totalMs).toBe(5_000);
  });

  test('a clock that went backwards makes an empty spell; old periods are dropped, their time is kept', () => {
    let l = markUp(openLedger(0, s(0)), s(-1));
    expect(l.totalMs).toBe(0);
    for (let i = 0; i < KEPT_PERIODS + 5; i++) l = markUp(markDown(l, s(i * 10), 'x'), s(i * 10 + 2));
    expect(l.periods).toHaveLength(KEPT_PERIODS);
    expect(l.totalMs).toBe((KEPT_PERIODS + 5) * 2_000);
  });
});

describe('command topics', () => {
  test.each([
    ['command/acme/sensor-1/req/r-1/setTemp', { requestId: 'r-1', name: 'setTemp' }],
    ['command///req/r-2/set/nested', { requestId: 'r-2', name: 'set/nested' }],
    ['command/acme/sensor-1/req//reboot', { requestId: null, name: 'reboot' }],
    ['devices/sensor-1/commands', { requestId: null, name: 'devices/sensor-1/commands' }],
  ])('%s', (topic, expected) => expect(parseCommandTopic(topic)).toEqual(expected));

  test('Command-Status: an HTTP-style status or nothing', () => {
    expect(commandStatusOf('404')).toBe(404);
    expect(commandStatusOf(['201'])).toBe(201);
    expect(commandStatusOf('99')).toBeUndefined();
    expect(commandStatusOf('700')).toBeUndefined();
    expect(commandStatusOf('ok')).toBeUndefined();
    expect(commandStatusOf(undefined)).toBeUndefined();
  });
});
