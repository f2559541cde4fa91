import { DEFAULT_TIMEOUT_FLOOR_MS, healthAt, openHealth, producersTimeout, recordHealth, RECOVERY_MS } from '../../src/endpoints/health';
import { endpointDowntimeReport, openEndpointLedger, recordOutcomes } from '../../src/endpoints/downtime';
import { addToTimeline } from '../../src/endpoints/timeline';
import type { AttemptOutcome } from '../../src/endpoints/types';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const ok = (s: number): AttemptOutcome => ({ at: T0 + s * 1000, ok: true, class: 'success', code: 'http-202' });
const down = (s: number): AttemptOutcome => ({ at: T0 + s * 1000, ok: false, class: 'server', code: 'http-503' });
const refused = (s: number): AttemptOutcome => ({ at: T0 + s * 1000, ok: false, class: 'client', code: 'http-400' });

test('healthy, failing while attempts cannot be sent, recovering for a minute after, then healthy', () => {
  let h = recordHealth(openHealth(), [ok(0), ok(1)]);
  expect(healthAt(h, T0 + 2_000)).toMatchObject({ state: 'healthy', failureRate: 0, attemptsLastMinute: 2 });
  h = recordHealth(h, [down(10), down(11), down(12)]);
  expect(healthAt(h, T0 + 13_000)).toMatchObject({ state: 'failing', failureRate: 0.6, failingSince: T0 + 10_000 });
  h = recordHealth(h, [ok(20)]);
  expect(healthAt(h, T0 + 21_000)).toMatchObject({ state: 'recovering', recoveredAt: T0 + 20_000 });
  expect(healthAt(h, T0 + 20_000 + RECOVERY_MS)).toMatchObject({ state: 'healthy' });
  // the failure rate forgets what is older than a minute
  expect(healthAt(h, T0 + 200_000)).toMatchObject({ failureRate: 0, attemptsLastMinute: 0 });
});

test('a client error is the endpoint answering: not a failure of the endpoint', () => {
  const h = recordHealth(openHealth(), [refused(0), refused(1)]);
  expect(healthAt(h, T0 + 2_000)).toMatchObject({ state: 'healthy', failureRate: 0, attemptsLastMinute: 2 });
});

test('one failure among successes is a glitch, not a state; a late report changes counts, not states', () => {
  let h = recordHealth(openHealth(), [ok(0), down(1), ok(2)]);
  expect(healthAt(h, T0 + 3_000)).toMatchObject({ state: 'healthy', failingSince: null, recoveredAt: null, attemptsLastMinute: 3 });
  h = recordHealth(h, [ok(10), down(9)]);
  expect(healthAt(h, T0 + 11_000)).toMatchObject({ state: 'healthy', attemptsLastMinute: 5 });
  // one failure with nothing after it: failing once it has lasted 5 s
  h = recordHealth(h, [down(20)]);
  expect(healthAt(h, T0 + 21_000).state).toBe('healthy');
  expect(healthAt(h, T0 + 26_000)).toMatchObject({ state: 'failing', failingSince: T0 + 20_000 });
});

test('a reported run of attempts that ended alike counts as that many', () => {
  const h = recordHealth(openHealth(), [{ ...down(1), count: 3 }]);
  expect(healthAt(h, T0 + 2_000)).toMatchObject({ state: 'failing', attemptsLastMinute: 3, failureRate: 1 });
  const l = recordOutcomes(openEndpointLedger({}, T0), [
    { ...down(0), count: 40 },
    { ...ok(70), count: 2 },
  ]);
  expect(endpointDowntimeReport(l, T0 + 80_000).periods).toEqual([
    expect.objectContaining({ attempts: 41, failures: 40, durationMs: 70_000 }),
  ]);
  expect(
    addToTimeline(
      [],
      [
        { ...down(0), count: 40 },
        { ...ok(70), count: 2 },
      ],
    ),
  ).toEqual([
    { second: T0 / 1000, ok: 0, failed: 40 },
    { second: T0 / 1000 + 70, ok: 2, failed: 0 },
  ]);
});

test("a timeout the producer chose below the floor is the producer's failure; any other failure, or a longer timeout, the endpoint's", () => {
  const failed = (code: string) => ({ code });
  for (const code of ['timeout', 'net-ETIMEDOUT', 'mqtt-no-puback']) {
    expect(producersTimeout(failed(code), 1, DEFAULT_TIMEOUT_FLOOR_MS)).toBe(true);
    expect(producersTimeout(failed(code), DEFAULT_TIMEOUT_FLOOR_MS, DEFAULT_TIMEOUT_FLOOR_MS)).toBe(false);
    expect(producersTimeout(failed(code), 1, 0)).toBe(false);
  }
  for (const code of ['http-503', 'net-ECONNREFUSED', 'net-ECONNRESET'])
    expect(producersTimeout(failed(code), 1, DEFAULT_TIMEOUT_FLOOR_MS)).toBe(false);
});
