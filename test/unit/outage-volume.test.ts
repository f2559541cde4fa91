import { HOLD_MAX_BYTES, HOLD_MAX_MESSAGES } from '../../src/contract/hold';
import {
  DEFAULT_VOLUME_COSTS,
  DEFAULT_VOLUME_SCENARIO,
  holdCapacity,
  outageAtVolume,
  sentInTime,
  VOLUME_DESIGN,
  type VolumeScenario,
} from '../../src/simulate/outage-volume';

/** The model at `rate` with the defaults, and what else is given. */
const at = (rate: number, more: Partial<VolumeScenario> = {}) => outageAtVolume({ ...DEFAULT_VOLUME_SCENARIO, rate, ...more });
const costs = (more: Partial<typeof DEFAULT_VOLUME_COSTS>) => ({ ...DEFAULT_VOLUME_COSTS, ...more });
const downS = DEFAULT_VOLUME_SCENARIO.downMs / 1000;
const probeS = DEFAULT_VOLUME_SCENARIO.probeEveryMs / 1000;

describe('sentInTime: which of a backlog go out before they expire', () => {
  /** Message by message: message i arrived at i / rate and goes at the latest of its paces. */
  function counted(backlog: number, rate: number, paces: { at: number; per: number }[], maxAgeS: number | null) {
    let [sent, lastAt] = [0, null as number | null];
    for (let i = 0; i < backlog; i++) {
      const goes = Math.max(...paces.map((p) => p.at + i / p.per));
      if (maxAgeS === null || goes - i / rate <= maxAgeS + 1e-9) [sent, lastAt] = [sent + 1, goes];
    }
    return { sent, lastAt };
  }

  test.each([
    // a pace slower than the arrivals: the newest expire; faster: the oldest; two paces; no max age
    [600, 10, [{ at: 60, per: 2 }], 200],
    [600, 10, [{ at: 60, per: 40 }], 50],
    [
      900,
      15,
      [
        { at: 60, per: 5 },
        { at: 0, per: 3 },
      ],
      150,
    ],
    [300, 5, [{ at: 30, per: 1 }], null],
    [0, 5, [{ at: 30, per: 1 }], 10],
  ])('%i messages at %i/s, paces %j, max age %p s: as counted one by one', (backlog, rate, paces, maxAgeS) => {
    const closed = sentInTime(backlog, rate, paces, maxAgeS);
    const each = counted(backlog, rate, paces, maxAgeS);
    expect(closed.sent).toBe(each.sent);
    if (each.sent) expect(closed.lastAt).toBeCloseTo(each.lastAt!, 6);
  });

  test('a pace of nothing sends nothing', () => {
    expect(sentInTime(100, 10, [{ at: 0, per: 0 }], null)).toEqual({ sent: 0, lastAt: null });
  });
});

describe('an outage at volume', () => {
  test('doubling the rate doubles the backlog, in both designs', () => {
    const [one, two] = [at(400), at(800)];
    expect(two.today.backlog).toBe(2 * one.today.backlog);
    expect(two.holds.backlog).toBe(2 * one.holds.backlog);
    // today's backlog is what failed while down; the hold design's also what came before a probe saw the recovery
    expect(one.today.backlog).toBe(400 * downS);
    expect(one.holds.backlog).toBe(400 * (downS + probeS));
  });

  test('today each waiting message starts a delivery workflow; in the hold design none does, and one hold starts per hold-full', () => {
    const f = at(1_000);
    expect(f.today.perMessage).toMatchObject({ workflowStarts: 1, deliveryStarts: 1, updates: 0, signals: 0 });
    expect(f.holds.expired).toBe(0);
    expect(f.holds.perMessage.deliveryStarts).toBe(0);
    expect(f.holds.holds).toBe(Math.ceil(f.holds.backlog / holdCapacity(DEFAULT_VOLUME_COSTS.heldBytes)));
    expect(f.holds.perMessage.workflowStarts).toBeCloseTo(f.holds.holds / f.holds.backlog, 12);
    // one update hands in a batch: fewer updates per message as batches fill up with the rate
    expect(at(10_000).holds.perMessage.updates).toBeLessThan(f.holds.perMessage.updates);
  });

  test('a hold takes at most its count and its bytes', () => {
    expect(holdCapacity(1)).toBe(HOLD_MAX_MESSAGES);
    for (const bytes of [300, 900, 5_000, 2 * HOLD_MAX_BYTES]) {
      expect(holdCapacity(bytes)).toBeLessThanOrEqual(HOLD_MAX_MESSAGES);
      if (holdCapacity(bytes) > 1) expect(holdCapacity(bytes) * bytes).toBeLessThanOrEqual(HOLD_MAX_BYTES);
    }
    const bigger = at(1_000, { costs: costs({ heldBytes: 2 * DEFAULT_VOLUME_COSTS.heldBytes }) });
    expect(bigger.holds.holds).toBeGreaterThan(at(1_000).holds.holds);
  });

  test('today the budget paces the drain: backlog ÷ budget when none expires, half as long with twice the budget', () => {
    const slow = at(5, { maxAgeMs: null });
    const fast = at(5, { maxAgeMs: null, budget: { perSecond: 20, burst: 20 } });
    expect(slow.today.expired).toBe(0);
    expect(slow.today.drainSeconds).toBeCloseTo((slow.today.backlog - 1) / 10, 6);
    expect(fast.today.drainSeconds).toBeCloseTo(slow.today.drainSeconds! / 2, 6);
  });

  test('today the drain outlasts the max age at volume: what expires and what is delivered make the backlog, a longer max age loses fewer', () => {
    const hour = at(1_000);
    const twoHours = at(1_000, { maxAgeMs: 2 * 3_600_000 });
    expect(hour.today.expired).toBeGreaterThan(0);
    expect(twoHours.today.expired).toBeLessThan(hour.today.expired);
    expect(at(1_000, { maxAgeMs: null }).today.expired).toBe(0);
    // the last delivered message was as old as the max age allows
    const lastAge = downS + hour.today.drainSeconds! - (hour.today.backlog - hour.today.expired - 1) / 1_000;
    expect(lastAge).toBeLessThanOrEqual(3_600);
    expect(lastAge).toBeGreaterThan(3_599);
  });

  test("requests while down: today's grow with the rate; the hold design's with the workers and the outage, not the rate", () => {
    const workers = 3;
    const [low, high] = [at(100, { workers }), at(1_000, { workers })];
    expect(high.today.requestsWhileDown - low.today.requestsWhileDown).toBe((1_000 - 100) * downS);
    expect(high.holds.requestsWhileDown).toBe(low.holds.requestsWhileDown);
    const longer = at(100, { workers, downMs: 2 * DEFAULT_VOLUME_SCENARIO.downMs });
    expect(longer.holds.requestsWhileDown - low.holds.requestsWhileDown).toBe((workers * downS) / probeS);
  });

  test("the hold design releases at the endpoint's spare pace, within the probe and slow start's seconds", () => {
    const rate = 1_000;
    for (const endpointRate of [1_500, 3_000]) {
      const f = at(rate, { endpointRate, workers: 50 });
      const slowStart = Math.ceil(Math.log2(VOLUME_DESIGN.windowCap)) * (DEFAULT_VOLUME_SCENARIO.latencyMs / 1000);
      expect(f.holds.drainSeconds).toBeGreaterThanOrEqual(f.holds.backlog / (endpointRate - rate) - 0.01);
      expect(f.holds.drainSeconds).toBeLessThanOrEqual(f.holds.backlog / (endpointRate - rate) + probeS + slowStart);
    }
    const saturated = at(rate, { endpointRate: rate, workers: 50 });
    expect(saturated.holds.drainSeconds).toBeNull();
    expect(saturated.holds.expired).toBe(saturated.holds.backlog);
    expect(saturated.breaksNext).toContain('never');
  });

  test('the hold design writes far less history per message than a delivery, and stays under the target of 0.1 events', () => {
    const f = at(1_000);
    expect(f.holds.perMessage.historyEvents).toBeLessThan(0.1);
    expect(f.holds.perMessage.historyEvents * 100).toBeLessThan(f.today.perMessage.historyEvents);
    expect(f.holds.perMessage.actions * 10).toBeLessThan(f.today.perMessage.actions);
    // a measured figure replaces the structure's
    expect(at(1_000, { costs: costs({ holdEvents: 0.5 }) }).holds.perMessage.historyEvents).toBe(0.5);
  });

  test('the cluster grows with the rate: workers and peak actions', () => {
    const [one, ten] = [at(1_000), at(10_000)];
    for (const design of ['today', 'holds'] as const) {
      expect(ten[design].workers).toBeGreaterThan(one[design].workers);
      expect(ten[design].peakActionsPerSecond).toBeGreaterThan(one[design].peakActionsPerSecond);
    }
    // sized workers drain the hold design's backlog within the outage's length
    expect(ten.holds.drainSeconds).toBeLessThanOrEqual(downS);
  });

  test('where it breaks next: a limit below the need is named first with its factor; with room everywhere, the nearest', () => {
    const tight = at(1_000, { costs: costs({ serverActions: 10 }) });
    expect(tight.breaksNext).toMatch(
      /^At 1,000 msg\/s the hold design breaks first at the server's action rate, [\d,.]+ actions\/s: [\d.]+× the 10 actions\/s/,
    );
    const roomy = at(1_000, { costs: costs({ serverActions: 1e9, serverStarts: 1e9 }) });
    expect(roomy.breaksNext).toMatch(/^At 1,000 msg\/s nothing breaks; the nearest limit is /);
    expect(roomy.limits.map((l) => l.need / l.capacity)).toEqual([...roomy.limits.map((l) => l.need / l.capacity)].sort((a, b) => b - a));
  });

  test('stays arithmetic at the bounds of its flags: a day at 10 million messages/s, one message per hold', () => {
    const started = Date.now();
    const f = at(10_000_000, { downMs: 86_400_000, costs: costs({ heldBytes: 2 * HOLD_MAX_BYTES }) });
    expect(f.holds.holds).toBe(f.holds.backlog);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
