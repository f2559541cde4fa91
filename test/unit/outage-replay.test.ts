import { InvalidInputError } from '../../src/errors';
import {
  CONTEXT_S,
  exportRecording,
  KEPT_DETAIL_SECONDS,
  openRecording,
  recordAttempts,
  RECORDING_FORMAT,
  recordReport,
  type OutageRecording,
} from '../../src/endpoints/recording';
import type { ArrivalProfile, AttemptOutcome } from '../../src/endpoints/types';
import { defaultPolicy } from '../../src/policy';
import { recordedFigures, replayOutage } from '../../src/simulate';
import { parseOutageRecording } from '../../src/simulate/outage-file';

const EVENT: ArrivalProfile = { kind: 'event', policy: defaultPolicy('event') };
const T0 = Date.parse('2026-11-23T10:00:00Z');
const ok = (at: number, extra: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  at,
  ok: true,
  class: 'success',
  code: 'http-202',
  ...extra,
});
const failed = (at: number, extra: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  at,
  ok: false,
  class: 'server',
  code: 'http-503',
  ...extra,
});

describe('the endpoint recording', () => {
  test('counts requests, failures, retries and first attempts by profile, per second', () => {
    const telemetry: ArrivalProfile = { kind: 'telemetry', policy: defaultPolicy('telemetry') };
    const r = recordAttempts(openRecording(), [
      ok(T0 + 100, { arrival: EVENT }),
      failed(T0 + 200, { arrival: telemetry, count: 3 }),
      failed(T0 + 900, { retry: true }),
      ok(T0 + 1_500, { arrival: { ...EVENT, policy: { ...EVENT.policy } } }),
      // a client error is the endpoint answering: not a failure of it
      { at: T0 + 1_600, ok: false, class: 'client', code: 'http-400', retry: true },
    ]);
    expect(r.profiles).toEqual([EVENT, telemetry]);
    expect(r.seconds).toEqual([
      { second: T0 / 1000, requests: 5, failed: 4, retries: 1, arrivals: [1, 3] },
      { second: T0 / 1000 + 1, requests: 2, failed: 0, retries: 1, arrivals: [1] },
    ]);
  });

  test('keeps spells of failures over a second as periods, the one going on as ongoing; glitches are left out', () => {
    let r = recordAttempts(openRecording(), [failed(T0), ok(T0 + 500), failed(T0 + 10_000), failed(T0 + 70_000), ok(T0 + 75_000)]);
    r = recordAttempts(r, [failed(T0 + 80_000), failed(T0 + 90_000)]);
    const periods = exportRecording(r, 'e:1', T0 + 95_000).periods;
    expect(periods).toEqual([
      { from: iso(T0 + 10_000), to: iso(T0 + 75_000), attempts: 3, failures: 2, reason: 'http-503' },
      { from: iso(T0 + 80_000), to: iso(T0 + 95_000), attempts: 2, failures: 2, reason: 'http-503', ongoing: true },
    ]);
  });

  test('folds quiet seconds far from failures into hours; keeps five minutes of context around them', () => {
    const quiet = Array.from({ length: 1_200 }, (_, i) => ok(T0 + i * 1_000, { arrival: EVENT }));
    const busyAt = T0 + 900_000;
    const outcomes = [...quiet, failed(busyAt + 10)].sort((a, b) => a.at - b.at);
    const r = recordAttempts(openRecording(), outcomes);
    const firstKept = r.seconds[0]!.second;
    expect(firstKept).toBe(busyAt / 1000 - CONTEXT_S);
    expect(r.seconds.at(-1)!.second).toBe(T0 / 1000 + 1_199);
    const inHours = r.hours.reduce((n, b) => n + b.requests, 0);
    expect(inHours + r.seconds.reduce((n, b) => n + b.requests, 0)).toBe(1_201);
    expect(inHours).toBe(busyAt / 1000 - CONTEXT_S - T0 / 1000);
    expect(r.detailFrom).toBeNull();
  });

  test('keeps at most KEPT_DETAIL_SECONDS seconds: a window that starts earlier starts where the detail does, incomplete', () => {
    const busy = Array.from({ length: KEPT_DETAIL_SECONDS + 100 }, (_, i) => failed(T0 + i * 1_000));
    const r = recordAttempts(openRecording(), busy);
    expect(r.seconds).toHaveLength(KEPT_DETAIL_SECONDS);
    expect(r.detailFrom).toBe(T0 / 1000 + 100);
    const window = exportRecording(r, 'e:1', T0 + 4_000_000, T0);
    expect([window.from, window.complete]).toEqual([iso(T0 + 100_000), false]);
    expect(exportRecording(r, 'e:1', T0 + 4_000_000, T0 + 200_000).complete).toBe(true);
  });

  test('counts deliveries that ended expired or exhausted, how late retries went out, and the budget the workers run with', () => {
    const r = recordReport(openRecording(), {
      ended: [
        { at: T0, outcome: 'expired', count: 2 },
        { at: T0 + 10, outcome: 'exhausted' },
      ],
      late: [{ plannedAt: T0 + 20, count: 3, totalMs: 900 }],
      budget: { perSecond: 5, burst: 10 },
    });
    expect(r.seconds).toEqual([{ second: T0 / 1000, requests: 0, failed: 0, retries: 0, expired: 2, exhausted: 1, late: 3, lateMs: 900 }]);
    expect(exportRecording(r, 'e:1', T0 + 1_000).budget).toEqual({ perSecond: 5, burst: 10 });
    expect(recordReport(r, {}).budget).toEqual({ perSecond: 5, burst: 10 });
  });
});

/** 500 deliveries arriving over 5 s to an endpoint that fails for 120 s from the first of them. */
function storm(profile: ArrivalProfile = EVENT, budget: OutageRecording['budget'] = { perSecond: 10, burst: 20 }): OutageRecording {
  const s = T0 / 1000;
  return {
    format: RECORDING_FORMAT,
    endpoint: 'ingest.example.com',
    from: iso(T0),
    to: iso(T0 + 3_600_000),
    complete: true,
    budget,
    profiles: [profile],
    periods: [{ from: iso(T0), to: iso(T0 + 120_000), attempts: 0, failures: 0, reason: 'http-503' }],
    seconds: Array.from({ length: 5 }, (_, i) => ({ second: s + i, requests: 100, failed: 100, retries: 0, arrivals: [100] })),
    hours: [],
  };
}

describe('the outage replay', () => {
  const budget = { perSecond: 10, burst: 20 };

  test('with a retry budget: retries while down at its rate, a bounded peak after recovery, a drain of the backlog at its pace', () => {
    const { figures, deliveries, delivered } = replayOutage(storm(), { budget });
    expect([deliveries, delivered]).toEqual([500, 500]);
    // 500 first attempts, the burst, then 10/s for the rest of the 120 s
    expect(figures.requestsWhileDown).toBeGreaterThanOrEqual(500 + 20 + 10 * 114);
    expect(figures.requestsWhileDown).toBeLessThanOrEqual(500 + 20 + 10 * 121);
    expect(figures.peakAfterRecovery).toBeLessThanOrEqual(11);
    expect(figures.drainSeconds).toBeGreaterThan(40);
    expect(figures.drainSeconds).toBeLessThan(60);
    expect(figures.requests).toBe(figures.requestsWhileDown + 500);
  });

  test('moves as the storm bench measured: no budget sends far more while down and drains later; no jitter peaks far higher and drains sooner', () => {
    const onBudget = replayOutage(storm(), { budget }).figures;
    const full = replayOutage(storm(), { budget: null }).figures;
    const noJitter = (p: ArrivalProfile) => ({ ...p.policy, jitter: 'none' as const });
    const none = replayOutage(storm(), { budget: null, policyOf: noJitter }).figures;
    const noneOnBudget = replayOutage(storm(), { budget, policyOf: noJitter }).figures;
    expect(full.requestsWhileDown).toBeGreaterThan(3 * onBudget.requestsWhileDown);
    expect(full.drainSeconds).toBeGreaterThan(onBudget.drainSeconds);
    expect(none.peakAfterRecovery).toBeGreaterThan(3 * full.peakAfterRecovery);
    expect(none.drainSeconds).toBeLessThan(full.drainSeconds);
    // the budget bounds the peak whatever the jitter
    expect(noneOnBudget.peakAfterRecovery).toBeLessThanOrEqual(budget.perSecond + 1);
  });

  test('sends retries as late as the recorded ones planned around the same time went out', () => {
    const quick: ArrivalProfile = { kind: 'event', policy: { ...EVENT.policy, jitter: 'none', max: 1_000 } };
    const onTime = storm(quick, 'off');
    const late = { ...onTime, seconds: [...onTime.seconds] };
    for (let i = 5; i < 200; i++) late.seconds.push({ second: T0 / 1000 + i, requests: 0, failed: 0, retries: 0, late: 2, lateMs: 6_000 });
    const [a, b] = [replayOutage(onTime, { budget: null }).figures, replayOutage(late, { budget: null }).figures];
    // a retry every second or so against one every 4 s
    expect(b.requestsWhileDown - 500).toBeLessThan((a.requestsWhileDown - 500) / 2);
  });

  test('bounds: deliveries expire at their max age, or exhaust their attempts, as the policy says', () => {
    const shortLived = storm({ kind: 'event', policy: { ...EVENT.policy, maxAge: 30_000 } });
    expect(replayOutage(shortLived, { budget: null }).figures).toMatchObject({ expired: 500, exhausted: 0, lateness: null });
    const fewAttempts = storm({ kind: 'event', policy: { ...EVENT.policy, maxAttempts: 3 } });
    expect(replayOutage(fewAttempts, { budget }).figures).toMatchObject({ expired: 0, exhausted: 500, requests: 1_500 });
  });

  test('is a pure function of the recording and the seed', () => {
    const a = replayOutage(storm(), { budget: null, seed: 7 });
    expect(replayOutage(storm(), { budget: null, seed: 7 })).toEqual(a);
    expect(replayOutage(storm(), { budget: null, seed: 8 }).figures).not.toEqual(a.figures);
  });
});

describe('recorded figures', () => {
  test('requests while down are the failures inside a period; the peak after recovery leaves out what failed before it; the drain ends with the backlog’s retries', () => {
    const s = T0 / 1000;
    const recording: OutageRecording = {
      ...storm(),
      periods: [{ from: iso(T0), to: iso(T0 + 10_500), attempts: 0, failures: 0, reason: 'http-503' }],
      seconds: [
        { second: s, requests: 30, failed: 30, retries: 0, arrivals: [30] },
        { second: s + 5, requests: 12, failed: 12, retries: 12 },
        { second: s + 10, requests: 25, failed: 5, retries: 25 },
        { second: s + 11, requests: 12, failed: 0, retries: 12 },
        { second: s + 20, requests: 1, failed: 0, retries: 1 },
        // a retry 400 s later, past the longest wait the policy allows (300 s), belongs to no backlog of this outage
        { second: s + 420, requests: 1, failed: 0, retries: 1 },
      ],
      hours: [{ second: s - 3_600, requests: 1_000, failed: 0, retries: 0, arrivals: [1_000] }],
    };
    expect(recordedFigures(recording)).toMatchObject({
      requests: 1_081,
      requestsWhileDown: 47,
      // the best 5 s after recovery: (20 + 12) / 5
      peakAfterRecovery: 6.4,
      // 90 % of the backlog's 13 retries had gone by the end of second 11; its last went 10 s after recovery
      drainSeconds: 1.5,
      lastRetrySeconds: 10.5,
      lateness: null,
    });
  });
});

describe('a recording file', () => {
  test('is refused with every wrong field named', () => {
    const bad = { ...storm(), periods: [{ from: 'yesterday', to: iso(T0), attempts: 1, failures: 1, reason: 'x' }] };
    bad.profiles = [{ kind: 'event', policy: { ...EVENT.policy, max: -1 } }];
    const error = (() => {
      try {
        parseOutageRecording(JSON.stringify(bad));
      } catch (err) {
        return err as InvalidInputError;
      }
      throw new Error('not refused');
    })();
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.problems.map((p) => p.field)).toEqual(['periods.0.from']);
    bad.periods = [];
    expect(() => parseOutageRecording(JSON.stringify(bad))).toThrow(/profiles\.0\.policy\.max/);
  });

  // each of these files is under a kilobyte; unbounded, the first asked for 3 million deliveries (1.16 GB)
  test.each([
    ['seconds.1.arrivals', { seconds: [bucketAt(0, 600_000), bucketAt(1, 2_400_000)] }],
    ['to', { to: '9999-12-31T00:00:00Z' }],
    [
      'periods.0.to',
      { to: iso(T0 + 40 * 86_400_000), periods: [{ from: iso(T0), to: iso(T0 + 40 * 86_400_000), attempts: 1, failures: 1, reason: 'x' }] },
    ],
    ['to', { to: iso(T0 - 1_000) }],
    ['periods.0.to', { periods: [{ from: iso(T0), to: '9999-12-31T00:00:00Z', attempts: 1, failures: 1, reason: 'x' }] }],
    ['periods.0.to', { periods: [{ from: iso(T0 + 5_000), to: iso(T0), attempts: 1, failures: 1, reason: 'x' }] }],
    ['seconds.0.second', { seconds: [bucketAt(-86_400, 1)] }],
    ['hours.0.second', { hours: [{ ...bucketAt(86_400, 0), second: 4_000_000_000 }] }],
    ['periods', { periods: Array.from({ length: 201 }, () => storm().periods[0]!) }],
    ['seconds', { seconds: Array.from({ length: 3_601 }, (_, i) => bucketAt(i, 1)) }],
  ])('past its bounds is refused before the replay, naming %s', (field, change) => {
    const file = JSON.stringify({ ...storm(), ...change });
    expect(refusal(file).problems.map((p) => p.field)).toEqual([field]);
  });

  test('a policy that retries without bound through the downtime stops the replay at its attempt bound, naming the periods', () => {
    const unbounded: ArrivalProfile = { kind: 'event', policy: { ...EVENT.policy, maxAttempts: 0, maxAge: null } };
    const recording = { ...storm(unbounded), to: iso(T0 + 30 * 86_400_000) };
    recording.periods = [{ ...recording.periods[0]!, to: recording.to }];
    let error: unknown;
    try {
      replayOutage(recording, { budget: null, maxAttempts: 100_000 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).problems.map((p) => p.field)).toEqual(['periods']);
    expect(replayOutage(storm(), { budget: null }).deliveries).toBe(500);
  });

  test('reads back what exportRecording writes', () => {
    let r = recordAttempts(openRecording(), [
      failed(T0, { arrival: EVENT }),
      failed(T0 + 1_500, { retry: true }),
      ok(T0 + 3_000, { retry: true }),
    ]);
    r = recordReport(r, {
      late: [{ plannedAt: T0 + 1_400, count: 1, totalMs: 100 }],
      ended: [{ at: T0, outcome: 'expired' }],
      budget: 'off',
    });
    const exported = exportRecording(r, 'ingest.example.com', T0 + 10_000);
    expect(exported.periods).toHaveLength(1);
    expect(parseOutageRecording(JSON.stringify(exported))).toEqual(exported);
  });
});

/** A second `offset` seconds after T0 that had `arrivals` first attempts of the one profile. */
function bucketAt(offset: number, arrivals: number) {
  return { second: T0 / 1000 + offset, requests: arrivals, failed: arrivals, retries: 0, arrivals: [arrivals] };
}

function refusal(file: string): InvalidInputError {
  try {
    parseOutageRecording(file);
  } catch (err) {
    if (err instanceof InvalidInputError) return err;
    throw err;
  }
  throw new Error('not refused');
}

function iso(t: number): string {
  return new Date(t).toISOString();
}
