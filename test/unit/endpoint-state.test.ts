import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { EndpointControl } from '../../src/endpoints/controls';
import { FAILING_AFTER_MS, RECOVERY_MS } from '../../src/endpoints/health';
import type { AttemptOutcome, EndpointReport, PaceView } from '../../src/endpoints/types';
import type { EndpointCarried } from '../../src/contract';
import {
  EndpointTracker,
  IDLE_CLOSE_MS,
  PACE_TTL_MS,
  SETTLE_MS,
  WORKER_TTL_MS,
  type EndpointEffects,
} from '../../src/workflows/endpoint-state';

// An endpoint's state and decisions without a server: the workflow's loop (workflows/endpoint.ts) runs them,
// and the search attribute updates, memos and patch markers recorded here are the commands its history holds.

const T0 = Date.parse('2026-11-21T12:00:00Z');
const ENDPOINT = 'https://ingest.example.com/events';
const ok = (at: number): AttemptOutcome => ({ at, ok: true, class: 'success', code: 'http-202' });
const down = (at: number): AttemptOutcome => ({ at, ok: false, class: 'connection', code: 'net-ECONNREFUSED' });
const report = (worker: string, outcomes: AttemptOutcome[]): EndpointReport => ({ worker, outcomes, heldBack: 0 });

/** A tracker on a clock, its commands in the order it made them; `patches`: the patches the run has. */
function tracked(patches: string[] = ['endpoint-breaker'], carried?: EndpointCarried) {
  const clock = { t: T0 };
  const commands: string[] = [];
  const memos: EndpointControl[] = [];
  const details: string[] = [];
  const effects: EndpointEffects = {
    details: (words) => details.push(words),
    upsert: (pairs: SearchAttributeUpdatePair[]) => commands.push(`EndpointHealth=${String(pairs[0]!.value)}`),
    patched: (id) => {
      commands.push(`patched ${id}`);
      return patches.includes(id);
    },
    publish: (control) => {
      commands.push('memo');
      memos.push(control);
    },
    published: () => undefined,
    measure: () => undefined,
    countDisabled: () => commands.push('counted disabled'),
  };
  const d = new EndpointTracker({ endpoint: ENDPOINT, carried }, { effects, now: () => clock.t });
  /** One turn of the loop at `at`: what it records and shows, the events due, and the wait that follows. */
  const turn = (at: number) => {
    clock.t = at;
    d.observe(at);
    const events = d.events.take(at).map((e) => e.type);
    const wait = d.nextWait(at, () => {
      commands.push('patched endpoint-wake-ahead');
      return patches.includes('endpoint-wake-ahead');
    });
    return { events, wait };
  };
  return { d, clock, commands, memos, details, turn };
}

describe('failing by time alone, and the wake', () => {
  test('one failed attempt and then silence: settles, turns failing at the spell plus FAILING_AFTER_MS, then waits for the idle close', () => {
    const { d, commands, turn } = tracked(['endpoint-wake-ahead']);
    d.report(report('w1', [down(T0)]));
    expect(turn(T0).wait.at).toBe(T0 + SETTLE_MS);
    expect(d.status(T0).state).toBe('healthy');

    // settled: a spell, not yet failing; the loop wakes when it turns failing by time alone
    expect(turn(T0 + SETTLE_MS).wait.at).toBe(T0 + FAILING_AFTER_MS);
    const failing = turn(T0 + FAILING_AFTER_MS);
    expect(failing.events).toEqual(['endpoint.failing']);
    expect(d.status(T0 + FAILING_AFTER_MS)).toMatchObject({ state: 'failing', failingSince: new Date(T0).toISOString() });
    // then nothing changes by time until the idle close: no wake at a time already past
    expect(failing.wait).toMatchObject({ at: T0 + IDLE_CLOSE_MS, idleEndsAt: T0 + IDLE_CLOSE_MS });
    // the search attribute once per state; the patch asked only where the old wait had passed
    expect(commands).toEqual(['EndpointHealth=healthy', 'EndpointHealth=failing', 'patched endpoint-wake-ahead']);
  });

  test('a run from before endpoint-wake-ahead waits again for the change it has seen, 1 ms at a time', () => {
    const { d, turn } = tracked([]);
    d.report(report('w1', [down(T0)]));
    turn(T0 + SETTLE_MS);
    const at = T0 + FAILING_AFTER_MS + 20;
    expect(turn(at).wait).toMatchObject({ at: T0 + FAILING_AFTER_MS, timeoutMs: 1 });
  });

  test('idle: the run closes after IDLE_CLOSE_MS without a report, unless a report woke it or it has settings of its own', () => {
    const { d, clock, turn } = tracked();
    const wait = turn(T0).wait;
    expect(wait.at).toBe(T0 + IDLE_CLOSE_MS);
    clock.t = wait.idleEndsAt;
    expect(d.closesAfter(wait, true)).toBe(false);
    expect(d.closesAfter(wait, false)).toBe(true);

    d.controls.changeSettings({ maxInFlight: 5 });
    expect(d.closesAfter(wait, false)).toBe(false);
    // it stays, and counts its idle time again from now
    expect(turn(clock.t).wait.idleEndsAt).toBe(clock.t + IDLE_CLOSE_MS);
  });
});

describe('breaker', () => {
  test('opens while failing with one prober, the first worker by identity; moves when that worker goes quiet; closes on the first success', () => {
    const { d, commands, memos, turn } = tracked();
    d.controls.changeSettings({ breaker: 'on' });
    d.report(report('w2', [down(T0), down(T0 + 100)]));
    d.report(report('w1', [down(T0 + 200)]));
    turn(T0 + SETTLE_MS + 200);
    expect(memos.at(-1)!.breaker).toEqual({ open: true, since: T0, prober: 'w1' });
    expect(commands.slice(-3)).toEqual(['patched endpoint-breaker', 'memo', 'EndpointHealth=failing']);

    // unchanged: nothing asked, nothing published
    commands.length = 0;
    turn(T0 + SETTLE_MS + 1_000);
    expect(commands).toEqual([]);

    // w1 stops reporting, w2 goes on failing: the probe passes to w2
    const later = T0 + WORKER_TTL_MS + 1_000;
    d.report(report('w2', [down(later - SETTLE_MS)]));
    turn(later);
    expect(memos.at(-1)!.breaker).toMatchObject({ open: true, prober: 'w2' });

    // a probe gets through: recovering, and the breaker closed
    d.report(report('w2', [ok(later)]));
    turn(later + SETTLE_MS);
    expect(memos.at(-1)!.breaker).toBeUndefined();
    expect(d.status(later + SETTLE_MS).state).toBe('recovering');
    expect(d.controls.control().breaker).toBeUndefined();
  });

  test('a run from before endpoint-breaker publishes no breaker', () => {
    const { d, memos, turn } = tracked([]);
    d.controls.changeSettings({ breaker: 'on' });
    d.report(report('w1', [down(T0), down(T0 + 1), down(T0 + 2)]));
    turn(T0 + SETTLE_MS + 2);
    expect(d.status(T0 + SETTLE_MS + 2).state).toBe('failing');
    expect(memos.every((m) => m.breaker === undefined)).toBe(true);
  });
});

describe('the recovery pace', () => {
  const pace = (state: PaceView['state'], window: number, why: string): PaceView => ({
    state,
    window,
    inFlight: window,
    cap: 32,
    why,
    changedAt: T0,
  });

  test("the status and the details carry the workers' latest paces, merged; kept until replaced (a pace reports only its changes), at most PACE_TTL_MS; no command", () => {
    const { d, commands, details, turn } = tracked();
    expect(d.status(T0).pace).toBeUndefined();
    d.report({ ...report('w2', [ok(T0)]), pace: pace('recovering', 4, 'halved: http-503 at 2026-11-21T11:59:59.000Z') });
    d.report({ ...report('w1', [ok(T0)]), pace: pace('recovering', 8, 'slow start: doubling while it succeeds') });
    d.report({ ...report('w1', []), pace: pace('recovering', 12, 'slow start: doubling while it succeeds') });
    turn(T0 + 1_000);
    const status = d.status(T0 + 1_000);
    expect(status.pace).toMatchObject({ state: 'recovering', window: 16, inFlight: 16, cap: 64 });
    expect(Object.keys(status.pace!.workers)).toEqual(['w1', 'w2']);
    expect(status.pace!.workers.w1!.window).toBe(12);
    expect(details.at(-1)).toMatch(/\n\npace: recovering — window 16 of 64 in flight across 2 workers \(/);
    // a failing worker's pace is the merged state
    d.report({ ...report('w2', []), pace: { ...pace('failing', 0, 'failing: 3 failures in a row'), inFlight: 0 } });
    expect(d.status(T0 + 2_000).pace).toMatchObject({ state: 'failing', window: 12, why: 'failing: 3 failures in a row' });
    // reports with a pace change no command: the search attribute and the memo are as without them
    expect(commands.filter((c) => c !== 'patched endpoint-wake-ahead')).toEqual(['EndpointHealth=healthy']);
    // w1 reported last at T0, w2 at T0 + 1 s: a quiet worker's pace stands (it has not changed) until PACE_TTL_MS
    expect(Object.keys(d.status(T0 + WORKER_TTL_MS).pace!.workers)).toEqual(['w1', 'w2']);
    expect(Object.keys(d.status(T0 + PACE_TTL_MS).pace!.workers)).toEqual(['w2']);
    expect(d.status(T0 + 1_000 + PACE_TTL_MS).pace).toBeUndefined();
    turn(T0 + 1_000 + PACE_TTL_MS);
    expect(details.at(-1)).not.toMatch(/pace:/);
  });

  test('continue-as-new carries the paces', () => {
    const first = tracked();
    first.d.report({ ...report('w1', [down(T0)]), pace: pace('recovering', 3, 'slow start: doubling while it succeeds') });
    const next = tracked(['endpoint-breaker'], first.d.carried());
    expect(next.d.status(T0 + 1_000).pace).toMatchObject({ state: 'recovering', window: 3 });
  });
});

test('auto-disable: the loop wakes when the endpoint has failed autoDisableAfter, disables it and announces it', () => {
  const { d, commands, memos, turn } = tracked();
  d.controls.changeSettings({ autoDisableAfter: 60_000 });
  d.report(report('w1', [down(T0), down(T0 + 1), down(T0 + 2)]));
  const failing = turn(T0 + SETTLE_MS + 2);
  expect(failing.wait.at).toBe(T0 + 60_000);
  commands.length = 0;
  const disabled = turn(T0 + 60_000);
  expect(memos.at(-1)!.mode).toMatchObject({ state: 'disabled', by: 'auto' });
  expect(commands).toEqual(['memo', 'counted disabled']);
  expect(disabled.events).toEqual(['endpoint.disabled']);
  // disabled: no auto-disable ahead, and the endpoint stays open when idle
  expect(disabled.wait.at).toBe(T0 + IDLE_CLOSE_MS);
});

test('continue-as-new: the next run starts where this one was, its reports still settling included', () => {
  const { d, turn } = tracked();
  d.report(report('w1', [down(T0), down(T0 + 1), down(T0 + 2)]));
  turn(T0 + SETTLE_MS + 2);
  d.report(report('w1', [ok(T0 + RECOVERY_MS)]));
  const carried = d.carried();
  // a report that comes while the run waits for its handlers to finish goes with it
  d.report(report('w2', [ok(T0 + RECOVERY_MS + 10)]));
  expect(carried.pending).toHaveLength(2);
  expect(carried.run).toBe(2);

  const next = tracked(undefined, JSON.parse(JSON.stringify(carried)) as EndpointCarried);
  const asOf = T0 + RECOVERY_MS + 20;
  expect(next.d.status(asOf)).toEqual(d.status(asOf));
  // the next run shows its state only when it changes: it already was failing
  next.turn(T0 + SETTLE_MS + 10);
  expect(next.commands).toEqual([]);
});
