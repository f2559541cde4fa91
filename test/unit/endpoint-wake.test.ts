import { FAILING_AFTER_MS, healthAt, openHealth, recordHealth, RECOVERY_MS, type HealthLedger } from '../../src/endpoints/health';
import type { AttemptOutcome } from '../../src/endpoints/types';
import { nextWake, type TimedChanges } from '../../src/endpoints/wake';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const IDLE = 30 * 24 * 3600_000;
const ok = (s: number): AttemptOutcome => ({ at: T0 + s * 1000, ok: true, class: 'success', code: 'http-202' });
const down = (s: number): AttemptOutcome => ({ at: T0 + s * 1000, ok: false, class: 'connection', code: 'ECONNREFUSED' });
const changes = (health: HealthLedger, over: Partial<TimedChanges> = {}): TimedChanges => ({
  settledAt: null,
  health,
  idleEndsAt: T0 + IDLE,
  deadLettersDueAt: null,
  autoDisableAt: null,
  ...over,
});

/** The wakes of an endpoint's loop with no report coming, from `from` until it goes idle. */
function wakes(c: TimedChanges, from: number): number[] {
  const seen: number[] = [];
  for (let now = from; now < c.idleEndsAt && seen.length < 100;) {
    now = nextWake(now, c);
    seen.push(now);
  }
  return seen;
}

test('one failed attempt and then silence: wakes once when it turns failing by time alone, then at the idle close', () => {
  const health = recordHealth(openHealth(), [down(0)]);
  const at = wakes(changes(health), T0 + 1_000);
  expect(at).toEqual([T0 + FAILING_AFTER_MS, T0 + IDLE]);
  expect(healthAt(health, at[0]!).state).toBe('failing');
  // woken after the spell turned failing (a report, a late timer), the next wake is the idle close: never a time already past
  expect(nextWake(T0 + FAILING_AFTER_MS + 1, changes(health))).toBe(T0 + IDLE);
});

test('never a time already past: whatever has passed, the wake is after now', () => {
  const failing = recordHealth(openHealth(), [down(0), down(1), down(2)]);
  const recovered = recordHealth(failing, [ok(10)]);
  const spell = recordHealth(openHealth(), [down(0)]);
  for (const health of [openHealth(), spell, failing, recovered]) {
    for (let now = T0; now < T0 + 2 * RECOVERY_MS; now += 250) {
      const c = changes(health, { deadLettersDueAt: T0 + 30_000, autoDisableAt: T0 + 60_000 });
      expect(nextWake(now, c)).toBeGreaterThan(now);
    }
  }
  // an idle close that came while outcomes were settling waits for them; once due, the next moment
  expect(nextWake(T0 + IDLE + 5, changes(openHealth(), { settledAt: T0 + IDLE + 3_005 }))).toBe(T0 + IDLE + 3_005);
  expect(nextWake(T0 + IDLE + 5, changes(openHealth()))).toBe(T0 + IDLE + 6);
});

test('the changes ahead, earliest first: settling, failing, recovered to healthy, dead letters, auto-disable', () => {
  const spell = recordHealth(openHealth(), [down(0)]);
  expect(nextWake(T0 + 1_000, changes(spell, { settledAt: T0 + 4_000 }))).toBe(T0 + 4_000);
  const recovered = recordHealth(recordHealth(openHealth(), [down(0), down(1), down(2)]), [ok(10)]);
  expect(nextWake(T0 + 11_000, changes(recovered))).toBe(T0 + 10_000 + RECOVERY_MS);
  expect(nextWake(T0 + 11_000, changes(recovered, { deadLettersDueAt: T0 + 40_000 }))).toBe(T0 + 40_000);
  const failing = recordHealth(openHealth(), [down(0), down(1), down(2)]);
  expect(nextWake(T0 + 3_000, changes(failing, { autoDisableAt: T0 + 60_000 }))).toBe(T0 + 60_000);
  expect(nextWake(T0 + 3_000, changes(failing))).toBe(T0 + IDLE);
});
