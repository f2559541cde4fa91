import { RetryBudget } from '../endpoints/budget';
import type { Breaker } from './breaker';
import { limitsOf, NO_LIMITS, type EndpointControl, type EndpointLimits } from '../endpoints/controls';

/*
 * Per-endpoint limits over every attempt a worker sends — first attempts, a batch's requests, retries
 * (docs/endpoint-health.md, "Limits"): at most `maxInFlight` at once and `rate` a second, all workers
 * together. Each worker takes its part as it does of the retry budget (1/N, N the workers polling the task
 * queue), and the rate is the budget's own cell rate with no burst. An attempt that finds no room gets a
 * time to come back: the next free slot of the rate, reserved in order as the budget reserves them, or,
 * when the attempts in flight are the bound, its turn as they end (Little's law: the slots over their mean
 * duration). Waiting on the server (an activity retry's `nextRetryDelay`) costs no history event; a wait
 * shorter than LOCAL_WAIT_MS is taken here, woken by a timer or by the attempt that ends, never by polling.
 */

/** Waits this short are taken in the activity: shorter than a round trip to the server and back is worth. */
export const LOCAL_WAIT_MS = 500;
/** Turns as attempts end are planned with this mean duration until some have ended. */
const FIRST_MEAN_MS = 1_000;
const MAX_TURN_MS = 30_000;

/**
 * Whether an attempt may go: with a release to call when it has ended; or the time to come back (its room);
 * or held (the breaker, or the endpoint paused) for a time the delivery's own backoff decides
 * (activities/limits.ts); or refused (the endpoint disabled): the delivery ends, saying why.
 */
export type Admission =
  | { go: true; release: (durationMs: number) => void }
  | { go: false; at: number; reason: typeof RATE | typeof IN_FLIGHT }
  | { go: false; held: true; reason: typeof BREAKER | typeof PAUSED; why: string }
  | { go: false; refused: true; reason: typeof DISABLED; why: string };

export interface AdmissionOptions {
  /** The limits of endpoints without their own settings (REDELIVER_ENDPOINT_MAX_IN_FLIGHT, REDELIVER_ENDPOINT_RATE). */
  defaults?: EndpointLimits;
  /** This worker's part of an endpoint's limits: 1/N with N workers (the reporter's count). Default 1. */
  share?: (endpoint: string) => number;
  /** The endpoint's control from its workflow (endpoint settings); undefined when it has none. */
  control?: (endpoint: string) => Promise<EndpointControl | undefined>;
  /** The circuit breaker (activities/breaker.ts); none: attempts are never held for a failing endpoint. */
  breaker?: Breaker;
  /** Default Date.now. */
  now?: () => number;
}

/** What one worker knows of one endpoint. */
interface Gate {
  limits: EndpointLimits;
  /** The rate as a budget with no burst (one cell per 1/rate s); rebuilt when the rate changes. */
  rate: RetryBudget | null;
  inFlight: number;
  /** Attempts waiting here for one in flight to end, first come first served. */
  waiters: (() => void)[];
  /** When the next turn as attempts end is planned (epoch ms). */
  nextTurn: number;
  /** Mean duration of its attempts (moving average). */
  meanMs: number;
}

export interface AskOptions {
  /** The attempt comes back at a slot of the rate reserved for it before: it takes no new one. */
  reserved?: boolean;
  /** A slot later than this (the delivery's expiry) is not reserved, only told. */
  notAfter?: number;
  signal?: AbortSignal;
}

export class EndpointAdmission {
  private readonly gates = new Map<string, Gate>();
  private readonly defaults: EndpointLimits;
  private readonly now: () => number;

  constructor(private readonly options: AdmissionOptions = {}) {
    this.defaults = options.defaults ?? NO_LIMITS;
    this.now = options.now ?? Date.now;
  }

  /** The endpoint's limits as this worker applies them now (the whole bound; this worker takes its share). */
  async limits(endpoint: string): Promise<EndpointLimits> {
    const control = await this.options.control?.(endpoint);
    return limitsOf(control?.settings, this.defaults);
  }

  /**
   * Whether an attempt to `endpoint` may go now. A wait shorter than LOCAL_WAIT_MS is taken here; a longer
   * one is told (`at`), for the caller to come back then with `reserved` when it was a reserved slot of the rate.
   */
  async ask(endpoint: string, options: AskOptions = {}): Promise<Admission> {
    const control = await this.options.control?.(endpoint);
    const mode = control?.mode;
    if (mode?.state === 'disabled') return { go: false, refused: true, reason: DISABLED, why: `${endpoint} is disabled: ${mode.reason}` };
    if (mode?.state === 'paused') return { go: false, held: true, reason: PAUSED, why: `${endpoint} is paused: ${mode.reason}` };
    const breaker = this.options.breaker;
    const call = breaker?.call(endpoint, control) ?? 'closed';
    const why = `${endpoint} is failing: its circuit breaker holds the attempt back (one probe at a time)`;
    if (call === 'held') return { go: false, held: true, reason: BREAKER, why };
    const gate = this.gate(endpoint, limitsOf(control?.settings, this.defaults));
    const share = this.options.share?.(endpoint) ?? 1;
    const admission = (await this.rateSlot(endpoint, gate, share, options)) ?? (await this.permit(gate, share, options.signal));
    if (call !== 'probe') return admission;
    // one probe at a time: the next when this one has ended, or now if this one waits for its room
    if (!admission.go) {
      breaker!.probeEnded(endpoint);
      return admission;
    }
    return {
      go: true,
      release: (durationMs) => {
        breaker!.probeEnded(endpoint);
        admission.release(durationMs);
      },
    };
  }

  /**
   * Waits here for room as long as it takes (a batch's request, whose activity heartbeats), then lets the
   * attempt go; when it is held or refused, says why (BREAKER, PAUSED, DISABLED): the caller hands it to a
   * delivery of its own, whose first attempt waits on the server, or ends.
   */
  async enter(endpoint: string, signal?: AbortSignal): Promise<((durationMs: number) => void) | { held: string }> {
    let reserved = false;
    for (;;) {
      const admission = await this.ask(endpoint, { reserved, ...(signal && { signal }) });
      if (admission.go) return admission.release;
      if (!('at' in admission)) return { held: admission.reason };
      reserved = admission.reason === RATE;
      await sleep(admission.at - this.now(), signal);
    }
  }

  /** Attempts in flight from this worker now, per endpoint (for metrics and tests). */
  inFlight(endpoint: string): number {
    return this.gates.get(endpoint)?.inFlight ?? 0;
  }

  private gate(endpoint: string, limits: EndpointLimits): Gate {
    let gate = this.gates.get(endpoint);
    if (!gate) {
      gate = { limits, rate: null, inFlight: 0, waiters: [], nextTurn: 0, meanMs: FIRST_MEAN_MS };
      this.gates.set(endpoint, gate);
    }
    if (gate.limits.rate !== limits.rate || (limits.rate !== null && !gate.rate)) {
      gate.rate = limits.rate === null ? null : new RetryBudget({ perSecond: limits.rate, burst: 1 });
    }
    gate.limits = limits;
    return gate;
  }

  /** The rate's slot: null when the attempt may go now, else when to come back (a short wait is taken here). */
  private async rateSlot(endpoint: string, gate: Gate, share: number, options: AskOptions): Promise<Admission | null> {
    const budget = gate.rate;
    if (!budget) return null;
    if (!options.reserved) {
      const slot = budget.acquire(endpoint, this.now(), share, options.notAfter);
      if (!slot.now && !(await this.waitedFor(slot.at, options.signal))) return { go: false, at: slot.at, reason: RATE };
    }
    // the strict bound on what goes out: reserved slots come due on timers that may fire together
    for (;;) {
      const sent = budget.admit(endpoint, this.now(), share);
      if (sent.now) return null;
      if (!(await this.waitedFor(sent.at, options.signal))) return { go: false, at: sent.at, reason: RATE };
    }
  }

  /** A place among the attempts in flight: now, after a short wait for one to end, or a turn to come back at. */
  private async permit(gate: Gate, share: number, signal?: AbortSignal): Promise<Admission> {
    const max = gate.limits.maxInFlight;
    const release = (durationMs: number) => this.release(gate, durationMs);
    if (max === null) return { go: true, release: (d) => this.measure(gate, d) };
    const mine = Math.max(1, Math.floor(max * share));
    if (gate.inFlight < mine && gate.waiters.length === 0) {
      gate.inFlight++;
      return { go: true, release };
    }
    if (gate.waiters.length < mine && (await this.waitForPermit(gate, signal))) return { go: true, release };
    // its turn as attempts end, each turn after the last one planned: those sent back do not all come at once
    const now = this.now();
    gate.nextTurn = Math.max(now, gate.nextTurn) + gate.meanMs / mine;
    return { go: false, at: Math.min(gate.nextTurn, now + MAX_TURN_MS), reason: IN_FLIGHT };
  }

  /** Waits up to LOCAL_WAIT_MS for an attempt in flight to end; true when it handed its place on. */
  private waitForPermit(gate: Gate, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (got: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', give);
        resolve(got);
      };
      const waiter = () => done(true);
      const give = () => {
        const i = gate.waiters.indexOf(waiter);
        if (i >= 0) gate.waiters.splice(i, 1);
        done(false);
      };
      const timer = setTimeout(give, LOCAL_WAIT_MS);
      signal?.addEventListener('abort', give, { once: true });
      gate.waiters.push(waiter);
    });
  }

  /** An attempt ended: its place goes to the first waiting here, or back to the pool. */
  private release(gate: Gate, durationMs: number): void {
    this.measure(gate, durationMs);
    const next = gate.waiters.shift();
    if (next) next();
    else gate.inFlight--;
  }

  private measure(gate: Gate, durationMs: number): void {
    gate.meanMs = gate.meanMs * 0.9 + Math.max(1, durationMs) * 0.1;
  }

  /** Sleeps until `at` when that is close; false (without sleeping) when it is not. */
  private async waitedFor(at: number, signal?: AbortSignal): Promise<boolean> {
    const ms = at - this.now();
    if (ms > LOCAL_WAIT_MS) return false;
    await sleep(ms, signal);
    return true;
  }
}

/** Why an attempt waits: a slot of the rate (reserved for it), or its turn as attempts in flight end; or is held: the breaker. */
export const RATE = 'rate';
export const IN_FLIGHT = 'in-flight';
export const BREAKER = 'breaker-open';
export const PAUSED = 'endpoint-paused';
export const DISABLED = 'endpoint-disabled';

/** Sleeps `ms` (nothing when not positive); an abort ends it with the signal's reason (the activity's cancellation). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}
