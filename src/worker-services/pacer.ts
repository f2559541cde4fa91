import { DEFAULT_PROBE_EVERY_MS, limitsOf, NO_LIMITS, workerShare, type EndpointControl, type EndpointLimits } from '../endpoints/controls';
import { sendingWasPossible } from '../endpoints/downtime';
import { extendSpell, spellFailing, type FailureSpell } from '../endpoints/health';
import type { AttemptOutcome, PaceState, PaceView } from '../endpoints/types';

export type { PaceState, PaceView } from '../endpoints/types';

/*
 * The recovery pacer (docs/endpoint-health.md, "Outages: holds and the recovery pace"): how one worker sends the
 * messages that wait in outage holds for an endpoint. While the endpoint fails it lets one probe through at a time,
 * at most one per probe interval; once an attempt gets through it opens a window of sends in flight that grows while
 * the endpoint keeps succeeding (slow start: +1 per success, doubling per round trip, then +1 per window: additive
 * increase), halves at a failure (multiplicative decrease, once per round trip) and stops growing while its smoothed
 * latency is well above its best; it never passes the endpoint's own max-in-flight share (nor the worker's cap). Failing again
 * (the breaker's rule: failures in a row, or a spell) closes it back to probes at once. It hears of every attempt to
 * the endpoint (an AttemptListener's): those decide failing and recovered; the sends it paced decide the window.
 */

/** A slot to send one held message; `sent` tells its outcome (or null when it was not sent after all). */
export interface PaceSlot {
  probe: boolean;
  /** `durationMs`: how long the send took (its latency); default: since the slot was given. */
  sent(outcome: AttemptOutcome | null, durationMs?: number): void;
}

export interface RecoveryPacer {
  state(endpoint: string): PaceState;
  /**
   * Whether a batch message's failed first attempt (retryable) waits in a hold: the endpoint is failing, or its
   * attempts are failing alike (two or more in a row). A lone failure while it is healthy is the message's own.
   */
  holds(endpoint: string): boolean;
  /** A slot for one held message now, or how long to wait before asking again (failing: the next probe's time). */
  acquire(endpoint: string, signal?: AbortSignal): Promise<PaceSlot | { waitMs: number }>;
  /** Every attempt's outcome to the endpoint from this worker (an AttemptListener's), first attempts included. */
  attempted(endpoint: string, outcome: AttemptOutcome, attempt?: { startedAt: number }): void;
  describe(endpoint: string): PaceView;
}

/**
 * The worker's cap on an endpoint's window (REDELIVER_RECOVERY_MAX_IN_FLIGHT). The window gets there by slow start and
 * holds below it while the endpoint's latency grows or it fails; the cap bounds an endpoint that shows neither. New
 * batches keep their own 32 requests in flight beside it (BATCH_ENDPOINT_CONCURRENCY): measured (bench section 10), a
 * cap of 32 drained a backlog at what was left of one such lane, 128 at the worker's healthy batch rate.
 */
export const DEFAULT_RECOVERY_MAX_IN_FLIGHT = 128;
/** A window at its cap this long without a failure (or a pacer with nothing to send this long) is healthy again. */
export const HEALTHY_AFTER_MS = 10_000;
/**
 * Sends slower, on average, than this many times the best one seen — and by more than LATENCY_SLACK_MS — stop the
 * window's growth: the endpoint is queueing. The slack keeps a busy worker's own delays (its event loop, its CPU) from
 * passing for the endpoint's: on a loaded 2-core machine a loopback sink's 5 ms became 100–350 ms that way.
 */
const LATENCY_FACTOR = 2;
const LATENCY_SLACK_MS = 250;
/** The weight of a new send in the smoothed latency (an exponential moving average, as TCP's smoothed RTT: 1/8). */
const LATENCY_WEIGHT = 1 / 8;
/** Failures in a row that make a batch's messages wait in a hold although the endpoint is not failing yet. */
const HOLDS_AFTER = 2;

export interface PacerOptions {
  /** The worker's cap on any endpoint's window. Default DEFAULT_RECOVERY_MAX_IN_FLIGHT. */
  maxInFlight?: number;
  /** The endpoint's control (its probeEvery, its max-in-flight, its breaker's prober); undefined when it has none. */
  control?: (endpoint: string) => Promise<EndpointControl | undefined>;
  /** The limits of endpoints without their own (the worker's defaults). Default none. */
  defaults?: EndpointLimits;
  /** This worker's part of an endpoint's limits: 1/N with N workers (the reporter's count). Default 1. */
  share?: (endpoint: string) => number;
  /** Told when an endpoint's state or window changed (the metrics). */
  changed?: (endpoint: string, view: PaceView) => void;
}

interface Waiter {
  resolve(answer: PaceSlot | { waitMs: number }): void;
}

/** What one worker knows of one endpoint's pace. */
interface Pace {
  spell: FailureSpell;
  /** The last failure's code, for the why. */
  lastCode: string;
  state: PaceState;
  window: number;
  /** Slow start below it, additive increase from it. */
  ssthresh: number;
  /** Successes since the window last grew in additive increase. */
  acked: number;
  inFlight: number;
  cap: number;
  probeEvery: number;
  /** Another worker is the breaker's prober: this one sends no probe. */
  otherProber: boolean;
  probing: boolean;
  lastProbeAt: number;
  /** The best latency of a paced send since it recovered, and the smoothed latency (ms). */
  bestMs: number | null;
  smoothedMs: number | null;
  /** When the window was last halved: a send given a slot before then does not halve it again (one cut per round trip). */
  cutAt: number;
  /** When the window reached its cap (null: not there, or cut since). */
  capAt: number | null;
  /** When the last slot was given. */
  lastSlotAt: number;
  changedAt: number;
  why: string;
  waiters: Waiter[];
}

export class Pacer implements RecoveryPacer {
  private readonly paces = new Map<string, Pace>();
  private readonly workerCap: number;

  constructor(
    /** This worker's identity: when the endpoint's breaker names another prober, that one probes. */
    private readonly identity: string,
    private readonly now: () => number = Date.now,
    private readonly options: PacerOptions = {},
  ) {
    this.workerCap = options.maxInFlight ?? DEFAULT_RECOVERY_MAX_IN_FLIGHT;
  }

  state(endpoint: string): PaceState {
    return this.current(endpoint).state;
  }

  holds(endpoint: string): boolean {
    const p = this.current(endpoint);
    return p.state === 'failing' || p.spell.failures >= HOLDS_AFTER;
  }

  describe(endpoint: string): PaceView {
    return this.view(this.current(endpoint));
  }

  async acquire(endpoint: string, signal?: AbortSignal): Promise<PaceSlot | { waitMs: number }> {
    await this.readControl(endpoint);
    if (signal?.aborted) throw signal.reason as Error;
    const p = this.current(endpoint);
    if (p.state === 'failing') return this.probe(endpoint, p);
    if (p.waiters.length === 0 && p.inFlight < this.window(p)) return this.slot(endpoint, p, false);
    return new Promise((resolve, reject) => {
      const abort = () => {
        const at = p.waiters.indexOf(waiter);
        if (at >= 0) p.waiters.splice(at, 1);
        reject(signal!.reason as Error);
      };
      const waiter: Waiter = {
        resolve: (answer) => {
          signal?.removeEventListener('abort', abort);
          resolve(answer);
        },
      };
      signal?.addEventListener('abort', abort, { once: true });
      p.waiters.push(waiter);
    });
  }

  attempted(endpoint: string, outcome: AttemptOutcome): void {
    const p = this.current(endpoint);
    p.spell = extendSpell(p.spell, outcome);
    const now = this.now();
    if (sendingWasPossible(outcome)) {
      if (p.state === 'failing') this.recover(endpoint, p, outcome.at);
      return;
    }
    p.lastCode = outcome.code;
    if (p.state !== 'failing' && spellFailing(p.spell, now)) this.fail(endpoint, p);
  }

  /** The pace now: created on first use, and what time alone changes (a spell that lasted, a quiet window at its cap). */
  private current(endpoint: string): Pace {
    let p = this.paces.get(endpoint);
    const now = this.now();
    if (!p) {
      p = {
        spell: { failures: 0, since: null },
        lastCode: '',
        state: 'healthy',
        window: this.workerCap,
        ssthresh: this.workerCap,
        acked: 0,
        inFlight: 0,
        cap: this.workerCap,
        probeEvery: DEFAULT_PROBE_EVERY_MS,
        otherProber: false,
        probing: false,
        lastProbeAt: -Infinity,
        bestMs: null,
        smoothedMs: null,
        cutAt: -Infinity,
        capAt: null,
        lastSlotAt: -Infinity,
        // never changed: a reporter has nothing to tell of it
        changedAt: 0,
        why: 'healthy: sends go within its limits',
        waiters: [],
      };
      this.paces.set(endpoint, p);
    }
    if (p.state !== 'failing' && spellFailing(p.spell, now)) this.fail(endpoint, p);
    if (p.state === 'recovering' && this.settled(p, now)) {
      Object.assign(p, { state: 'healthy', window: p.cap, changedAt: now, why: `healthy: no failure for ${HEALTHY_AFTER_MS / 1000} s` });
      this.changed(endpoint, p);
      this.serve(endpoint, p);
    }
    return p;
  }

  /** Recovering turns healthy once the window has been at its cap, or the pacer idle, for HEALTHY_AFTER_MS without a failure. */
  private settled(p: Pace, now: number): boolean {
    if (p.spell.failures > 0) return false;
    if (p.capAt !== null) return now - p.capAt >= HEALTHY_AFTER_MS;
    const idle = p.inFlight === 0 && p.waiters.length === 0;
    return idle && now - Math.max(p.lastSlotAt, p.changedAt, p.cutAt) >= HEALTHY_AFTER_MS;
  }

  /** The window in force: the cap while healthy (it follows the endpoint's settings), never above it. */
  private window(p: Pace): number {
    if (p.state === 'failing') return 0;
    return p.state === 'healthy' ? p.cap : Math.min(p.window, p.cap);
  }

  /** The endpoint's cap, probe interval and prober, as its control says now. */
  private async readControl(endpoint: string): Promise<void> {
    const control = await this.options.control?.(endpoint);
    const p = this.current(endpoint);
    const bound = limitsOf(control?.settings, this.options.defaults ?? NO_LIMITS).maxInFlight;
    const share = this.options.share?.(endpoint) ?? 1;
    p.cap = bound === null ? this.workerCap : Math.min(this.workerCap, workerShare(bound, share));
    p.probeEvery = control?.settings.probeEvery ?? DEFAULT_PROBE_EVERY_MS;
    const prober = control?.breaker?.open ? control.breaker.prober : null;
    p.otherProber = prober !== null && prober !== this.identity;
  }

  /** While failing: the probe, when none is out and the last was probeEvery ago; else when to ask again. */
  private probe(endpoint: string, p: Pace): PaceSlot | { waitMs: number } {
    const now = this.now();
    if (p.otherProber || p.probing) return { waitMs: p.probeEvery };
    const due = p.lastProbeAt + p.probeEvery;
    if (now < due) return { waitMs: due - now };
    const before = p.lastProbeAt;
    p.probing = true;
    p.lastProbeAt = now;
    return this.slot(endpoint, p, true, before);
  }

  /** `probedBefore`: a probe's, the last probe before it: a probe slot given back unused (sent(null)) was no probe. */
  private slot(endpoint: string, p: Pace, probe: boolean, probedBefore = -Infinity): PaceSlot {
    const givenAt = this.now();
    p.inFlight++;
    p.lastSlotAt = givenAt;
    let done = false;
    return {
      probe,
      sent: (outcome, durationMs) => {
        if (done) return;
        done = true;
        p.inFlight--;
        if (probe) p.probing = false;
        // a message that expired in the hold, or that its endpoint's limits held, sent nothing: the next goes as the probe
        if (probe && !outcome) p.lastProbeAt = probedBefore;
        if (outcome) this.paced(endpoint, p, outcome, durationMs ?? this.now() - givenAt, givenAt);
        this.serve(endpoint, p);
      },
    };
  }

  /** A paced send's outcome shapes the window: it grows on a success (unless slow), halves on a failure. */
  private paced(endpoint: string, p: Pace, outcome: AttemptOutcome, latencyMs: number, givenAt: number): void {
    if (sendingWasPossible(outcome)) {
      // a listener may not have told it: the success closes the outage all the same
      if (p.state === 'failing') this.recover(endpoint, p, outcome.at);
      if (p.state === 'recovering') this.grow(endpoint, p, latencyMs);
    } else if (p.state !== 'failing' && givenAt >= p.cutAt) {
      this.cut(endpoint, p, outcome);
    }
  }

  private grow(endpoint: string, p: Pace, latencyMs: number): void {
    p.bestMs = Math.min(p.bestMs ?? latencyMs, latencyMs);
    p.smoothedMs = p.smoothedMs === null ? latencyMs : p.smoothedMs + LATENCY_WEIGHT * (latencyMs - p.smoothedMs);
    if (p.smoothedMs > Math.max(LATENCY_FACTOR * p.bestMs, p.bestMs + LATENCY_SLACK_MS)) {
      const [smoothed, best] = [Math.round(p.smoothedMs), Math.round(p.bestMs)];
      p.why = `latency ${smoothed} ms on average, over ${LATENCY_FACTOR}× its best (${best} ms) and ${LATENCY_SLACK_MS} ms more: the window holds`;
      return;
    }
    if (p.window >= p.cap) return;
    if (p.window < p.ssthresh) {
      p.window++;
      p.why = 'slow start: doubling while it succeeds';
    } else if (++p.acked >= p.window) {
      p.acked = 0;
      p.window++;
      p.why = 'additive increase: one more per window of successes';
    }
    if (p.window >= p.cap) {
      p.window = p.cap;
      p.capAt ??= this.now();
      p.why = `at its cap of ${p.cap}: healthy after ${HEALTHY_AFTER_MS / 1000} s without a failure`;
    }
    this.changed(endpoint, p);
  }

  /** A paced send failed while the endpoint is not failing: the window halves (healthy turns recovering). */
  private cut(endpoint: string, p: Pace, outcome: AttemptOutcome): void {
    const now = this.now();
    const half = Math.max(1, Math.floor(this.window(p) / 2));
    if (p.state === 'healthy') Object.assign(p, { state: 'recovering', changedAt: now, bestMs: null, smoothedMs: null });
    Object.assign(p, { window: half, ssthresh: half, acked: 0, cutAt: now, capAt: null });
    p.why = `halved: ${outcome.code} at ${new Date(outcome.at).toISOString()}`;
    this.changed(endpoint, p);
  }

  /** Failing: probes only; those waiting for a slot are told when to ask again. */
  private fail(endpoint: string, p: Pace): void {
    const now = this.now();
    const since = new Date(p.spell.since ?? now).toISOString();
    const failures = `${p.spell.failures} failure${p.spell.failures === 1 ? '' : 's'} in a row (${p.lastCode || 'failing'}) since ${since}`;
    Object.assign(p, {
      state: 'failing',
      // slow start after the outage up to the cap: an outage says nothing of what the endpoint takes once it is back (a
      // congestion would, as a loss does to TCP: a failure while it answers halves the window, cut)
      ssthresh: p.cap,
      window: 0,
      acked: 0,
      capAt: null,
      changedAt: now,
      why: `failing: ${failures}; one probe at a time, at most one per ${p.probeEvery / 1000} s`,
    });
    for (const waiter of p.waiters.splice(0)) waiter.resolve({ waitMs: p.probeEvery });
    this.changed(endpoint, p);
  }

  /** An attempt got through after the endpoint was failing: a window of one, growing in slow start. */
  private recover(endpoint: string, p: Pace, at: number): void {
    Object.assign(p, {
      state: 'recovering',
      window: 1,
      acked: 0,
      bestMs: null,
      smoothedMs: null,
      capAt: null,
      changedAt: this.now(),
      why: `recovering: an attempt got through at ${new Date(at).toISOString()}; slow start: doubling while it succeeds`,
    });
    this.changed(endpoint, p);
    this.serve(endpoint, p);
  }

  /** Gives the freed slots to those waiting, first come first served. */
  private serve(endpoint: string, p: Pace): void {
    while (p.waiters.length > 0 && p.state !== 'failing' && p.inFlight < this.window(p)) {
      p.waiters.shift()!.resolve(this.slot(endpoint, p, false));
    }
  }

  private changed(endpoint: string, p: Pace): void {
    this.options.changed?.(endpoint, this.view(p));
  }

  private view(p: Pace): PaceView {
    return { state: p.state, window: this.window(p), inFlight: p.inFlight, cap: p.cap, why: p.why, changedAt: p.changedAt };
  }
}
