import { emit, printable, printableFields } from '../../src/cli/output';
import { formatSubscription } from '../../src/cli/subscribe';
import type { SubscriptionStatus } from '../../src/subscription/types';

test('printable shows every character a terminal would act on as an escape, and leaves text alone', () => {
  expect(printable('\x1b]0;pwned\x07\x1b[2J')).toBe('\\x1b]0;pwned\\x07\\x1b[2J');
  expect(printable('ok\rfake\bx\x00\x7f')).toBe('ok\\x0dfake\\x08x\\x00\\x7f');
  // C1 controls (CSI as one code point) and bidi overrides that reorder what is shown
  expect(printable('a\u009b2Jb \u202egnp.exe\u202c \u2066x\u2069')).toBe('a\\x9b2Jb \\u202egnp.exe\\u202c \\u2066x\\u2069');
  expect(printable('one\ntwo\tthree')).toBe('one\\x0atwo\\x09three');
  expect(printable('one\ntwo', { keepNewlines: true })).toBe('one\ntwo');
  expect(printable('température 21,5 °C — 日本 ✓ \\x1b')).toBe('température 21,5 °C — 日本 ✓ \\x1b');
});

test('printableFields escapes every string of a record, newlines too, and keeps its shape', () => {
  const record = { id: 'a\nb', n: 3, nested: { reason: '\x1b[2J', list: ['\x07'] }, none: null };
  expect(printableFields(record)).toEqual({ id: 'a\\x0ab', n: 3, nested: { reason: '\\x1b[2J', list: ['\\x07'] }, none: null });
});

/** What `emit` writes to stdout, as lines. */
function printed(run: () => void): string[] {
  const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
  try {
    run();
    return write.mock.calls
      .map(([chunk]) => String(chunk))
      .join('')
      .split('\n')
      .slice(0, -1);
  } finally {
    write.mockRestore();
  }
}

/** A value from outside that would print a line of its own, and the same shown on its line. */
const BREAKING = 'done\nstate       delivered\r\n';
const SHOWN = 'done\\x0astate       delivered\\x0d\\x0a';

describe('human output: what came from outside stays on its line; the layout keeps its own lines', () => {
  test('one line (result, submit --wait): a line break in a value is escaped', () => {
    const result = { deliveryId: 'delivery/acme/d/m', outcome: 'cancelled', attempts: 1, reason: BREAKING };
    const line = printed(() =>
      emit(false, result, () => `${result.deliveryId}: ${result.outcome} after ${result.attempts} attempt(s) — ${result.reason}`),
    );
    expect(line).toEqual([`delivery/acme/d/m: cancelled after 1 attempt(s) — ${SHOWN}`]);
    // JSON escapes it as JSON does
    expect(JSON.parse(printed(() => emit(true, result, () => '')).join('\n'))).toEqual(result);
  });

  test("many lines (subscribe status): a topic, a summary and an error's reason each keep to their line", () => {
    const downtime = { thresholdMs: 60_000, since: '2026-01-15T12:00:00.000Z', totalMs: 0, periods: [], current: null, outages: 0 };
    const status: SubscriptionStatus = {
      subscriptionId: 'subscription/acme/sensor-1',
      tenant: 'acme',
      device: 'sensor-1',
      endpoint: 'broker.example.com:1883',
      topic: `command/acme/sensor-1/req/#${BREAKING}`,
      state: 'stopping',
      summary: `stopping: ${BREAKING}`,
      subscribedSince: null,
      attempts: 0,
      holds: 1,
      nextAttemptAt: null,
      lastError: { class: 'client', code: 'http-400', reason: BREAKING, attempt: 1, at: '2026-01-15T12:00:01.000Z' },
      commands: { received: 0, handed: 0, responded: 0, failed: 0, queued: 0 },
      recentCommands: [],
      downtime,
    };
    const lines = printed(() => emit(false, status, () => formatSubscription(status)));
    expect(lines).toEqual([
      'subscription/acme/sensor-1',
      `  stopping: ${SHOWN}`,
      '  state       stopping',
      `  broker      broker.example.com:1883 topic command/acme/sensor-1/req/#${SHOWN}`,
      '  commands    0 received, 0 handed over, 0 answered, 0 failed, 0 queued',
      '  downtime    0 s in 0 period(s) longer than 1 min, 0 outage(s) since 2026-01-15T12:00:00.000Z',
      `  last error  client http-400: ${SHOWN}`,
    ]);
  });
});
