import { mergePaces, paceInWords } from '../../src/endpoints/pace';
import type { PaceView } from '../../src/endpoints/types';

const view = (state: PaceView['state'], window: number, cap: number, why: string): PaceView => ({
  state,
  window,
  inFlight: Math.min(window, 3),
  cap,
  why,
  changedAt: 0,
});

test('`endpoint show` and the UI say the pace in one line: the state, the window of the cap, and why', () => {
  const one = mergePaces({ w1: view('recovering', 12, 32, 'slow start: doubling while it succeeds') })!;
  expect(paceInWords(one)).toBe('pace: recovering — window 12 of 32 in flight (slow start: doubling while it succeeds)');
  const failing = mergePaces({ w1: view('failing', 0, 32, 'failing: 3 failures in a row (http-503)') })!;
  expect(paceInWords(failing)).toBe('pace: failing — probes only, one at a time (failing: 3 failures in a row (http-503))');
});

test("several workers: the worst state and its why, the windows and caps summed, each worker's own kept", () => {
  const merged = mergePaces({
    b: view('healthy', 16, 16, 'healthy: no failure for 10 s'),
    a: view('recovering', 4, 16, 'halved: http-503 at 2026-01-15T12:00:00.000Z'),
  })!;
  expect(merged).toMatchObject({
    state: 'recovering',
    window: 20,
    cap: 32,
    inFlight: 6,
    why: 'halved: http-503 at 2026-01-15T12:00:00.000Z',
  });
  expect(Object.keys(merged.workers)).toEqual(['a', 'b']);
  expect(paceInWords(merged)).toBe(
    'pace: recovering — window 20 of 32 in flight across 2 workers (halved: http-503 at 2026-01-15T12:00:00.000Z)',
  );
  expect(mergePaces({})).toBeNull();
});
