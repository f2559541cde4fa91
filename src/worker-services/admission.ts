import { RetryBudget, type Grant } from '../endpoints/budget';
import type { Breaker } from './breaker';
import { limitsOf, NO_LIMITS, workerShare, type EndpointLimits } from '../endpoints/controls';
import { RankedCells, RANKS, rankOf } from '../endpoints/priority';
import type { MessageKind } from '../policy/types';
import { RankedQueue } from './ranked-queue';
import type { MaybeRead } from './control-cache';

/*
 * Per-endpoint limits over every attempt a worker sends — first attempts, a batch's requests, retries
 * (docs/endpoint-health.md, "Limits"): at most `maxInFlight` at once and `rate` a second, all workers
 * together. Each worker takes its part as it does of the retry budget (1/N, N the workers polling the task
 * queue), and the rate is the budget's own cell rate with no burst. An attempt that finds no room gets a
 * time to come back: the next free slot of the rate, reserved in order as the budget reserves them, or,
 * when the attempts in flight are the bound, its turn as they end (Little's law: the slots over their mean
 * duration). Waiting on the server (an activity retry's `nextRetryDelay`) costs no history event; a wait
 * shorter than LOCAL_WAIT_MS is taken here, woken by a timer or by the attempt that ends, never by polling.
 * Deadline-first (the endpoint's `priority`, docs/endpoint-health.md): slots and turns are reserved per rank,
 * and those waiting here are served by rank, so a command response comes before telemetry that came earlier.
 */

/** Waits this short are taken in the activity: shorter than a round trip to the server and back is worth. */
export const LOCAL_WAIT_MS = 500;
/** Turns as attempts end are planned with this mean duration until some have ended. */
const FIRST_MEAN_MS = 1_000;
const MAX_TURN_MS = 30_000;
/** A cell told to an attempt that has not come back for it this long after it is forgotten. */
const FORGET_MS = 60_000;

/**
 * Whether an attempt may go: with a release to call when it has ended; or the time to come back (its room);
 * or held (the breaker, or the endpoint paused) for a time the delivery's own backoff decides
 * (passLimits); or refused (the endpoint disabled): the delivery ends, saying why.
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
  /** The endpoint's control from its workflow (endpoint settings); undefined when it has none. At once when known (ControlCache). */
  control?: (endpoint: string) => MaybeRead;
  /** The circuit breaker (docs/endpoint-health.md, "Circuit breaker"); none: attempts are never held for a failing endpoint. */
  breaker?: Breaker;
  /** Default Date.now. */
  now?: () => number;
}

/** What one worker knows of one endpoint. */
interface Gate {
  limits: EndpointLimits;
  /** The strict bound on what goes out: the rate as a budget with no burst (one cell per 1/rate s); rebuilt when the rate changes. */
  rate: RetryBudget | null;
  /** The rate's cells reserved ahead, per rank; none before `sentUntil`, the strict bound's next free cell. */
  cells: RankedCells;
  sentUntil: number;
  /** Cells told to attempts of each rank but the last that have not come back for them yet (sorted, epoch ms). */
  due: number[][];
  /** Attempts waiting here for the strict bound's next cell, and when it comes (epoch ms). */
  cellWaiters: RankedQueue;
  nextCell: number | null;
  inFlight: number;
  /** Attempts waiting here for one in flight to end. */
  waiters: RankedQueue;
  /** Turns as attempts end, planned per rank. */
  turns: RankedCells;
  /** Mean duration of its attempts (moving average). */
  meanMs: number;
}

export interface AskOptions {
  /** The attempt comes back at a slot of the rate reserved for it before (`reservedAt`, as told): it takes no new one. */
  reserved?: boolean;
  reservedAt?: number;
  /** A slot later than this (the delivery's expiry) is not reserved, only told; nor is a wait here taken past it. */
  notAfter?: number;
  /** What the attempt carries: its rank when slots are scarce (rankOf). None: the first rank. */
  kind?: MessageKind;
  signal?: AbortSignal;
}

/** An ask as the gate serves it: this worker's share of the limits, and the attempt's rank. */
type Asking = AskOptions & { share: number; rank: number };

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
    const read = this.options.control?.(endpoint);
    const control = read instanceof Promise ? await read : read;
    const mode = control?.mode;
    if (mode?.state === 'disabled') return { go: false, refused: true, reason: DISABLED, why: `${endpoint} is disabled: ${mode.reason}` };
    if (mode?.state === 'paused') return { go: false, held: true, reason: PAUSED, why: `${endpoint} is paused: ${mode.reason}` };
    const breaker = this.options.breaker;
    const call = breaker?.call(endpoint, control) ?? 'closed';
    const why = `${endpoint} is failing: its circuit breaker holds the attempt back (one probe at a time)`;
    if (call === 'held') return { go: false, held: true, reason: BREAKER, why };
    const gate = this.gate(endpoint, limitsOf(control?.settings, this.defaults));
    const asking = { ...options, share: this.options.share?.(endpoint) ?? 1, rank: rankOf(options.kind, control?.settings.priority) };
    // without a rate, and with room, nothing is awaited (at volume each promise counts: issue 32)
    const slot = gate.rate ? await this.rateSlot(endpoint, gate, asking) : null;
    const admission = slot ?? this.permitNow(gate, asking) ?? (await this.waitForRoom(endpoint, gate, asking));
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
   * attempt go; when it is held or refused, says why (BREAKER, PAUSED, DISABLED, or NO_ROOM before `notAfter`):
   * the caller hands it to a delivery of its own, whose first attempt waits on the server, or ends.
   */
  async enter(endpoint: string, options: Omit<AskOptions, 'reserved'> = {}): Promise<((durationMs: number) => void) | { held: string }> {
    let reserved: Pick<AskOptions, 'reserved' | 'reservedAt'> = {};
    for (;;) {
      const admission = await this.ask(endpoint, { ...reserved, ...options });
      if (admission.go) return admission.release;
      if (!('at' in admission)) return { held: admission.reason };
      if (options.notAfter !== undefined && admission.at >= options.notAfter) return { held: NO_ROOM };
      reserved = admission.reason === RATE ? { reserved: true, reservedAt: admission.at } : {};
      await sleep(admission.at - this.now(), options.signal);
    }
  }

  /** Attempts in flight from this worker now, per endpoint (for metrics and tests). */
  inFlight(endpoint: string): number {
    return this.gates.get(endpoint)?.inFlight ?? 0;
  }

  private gate(endpoint: string, limits: EndpointLimits): Gate {
    let gate = this.gates.get(endpoint);
    if (!gate) {
      gate = {
        limits,
        rate: null,
        cells: new RankedCells(),
        sentUntil: -Infinity,
        due: Array.from({ length: RANKS - 1 }, () => []),
        cellWaiters: new RankedQueue(),
        nextCell: null,
        inFlight: 0,
        waiters: new RankedQueue(),
        turns: new RankedCells(),
        meanMs: FIRST_MEAN_MS,
      };
      this.gates.set(endpoint, gate);
    }
    if (gate.limits.rate !== limits.rate || (limits.rate !== null && !gate.rate)) {
      gate.rate = limits.rate === null ? null : new RetryBudget({ perSecond: limits.rate, burst: 1 });
      gate.cells = new RankedCells();
    }
    gate.limits = limits;
    return gate;
  }

  /** The rate's slot: null when the attempt may go now, else when to come back (a short wait is taken here). */
  private async rateSlot(endpoint: string, gate: Gate, options: Asking): Promise<Admission | null> {
    if (!gate.rate) return null;
    const displaced = options.reserved === true && this.outranked(gate, options);
    if (!options.reserved || displaced) {
      const from = Math.max(this.now(), gate.sentUntil);
      const cell = gate.cells.take(options.rank, from, this.interval(gate, options), options.notAfter, displaced);
      if (!cell.taken) return { go: false, at: cell.at, reason: RATE };
      if (!(await this.waitedFor(cell.at, options))) return this.told(gate, options.rank, cell.at);
    }
    return this.strictCell(endpoint, gate, options);
  }

  /**
   * An attempt back for its cell yields it to a higher rank told a cell due by now that has not come yet (its
   * timer fires a little later): it takes the gap that one left behind its rank's cells. One late by more than a
   * cell is not waited for: it queues here for the next cell when it comes, ahead of the lower ranks.
   */
  private outranked(gate: Gate, options: Asking): boolean {
    if (options.reservedAt !== undefined && options.rank < RANKS - 1) removeSorted(gate.due[options.rank]!, options.reservedAt);
    const now = this.now();
    const interval = this.interval(gate, options);
    for (let rank = 0; rank < options.rank; rank++) {
      const due = gate.due[rank]!;
      while (due.length > 0 && due[0]! < now - interval) due.shift();
      if (due.length > 0 && due[0]! <= now + interval / 2) return true;
    }
    return false;
  }

  /** Tells an attempt its cell, which lower ranks yield to it when it comes (outranked). */
  private told(gate: Gate, rank: number, at: number): Admission {
    const due = gate.due[rank];
    if (due) {
      // cells of attempts that never came back (their delivery ended, their worker was lost) are forgotten
      while (due.length > 0 && due[0]! < this.now() - FORGET_MS) due.shift();
      insertSorted(due, at);
    }
    return { go: false, at, reason: RATE };
  }

  /**
   * The strict bound on what goes out: reserved cells come due on timers that may fire late and together,
   * so those that find the next cell gone wait here for one, by rank: the cells a lower rank was told and a
   * higher one took put the lower one's surplus at the back. A wait longer than LOCAL_WAIT_MS is told instead.
   */
  private async strictCell(endpoint: string, gate: Gate, options: Asking): Promise<Admission | null> {
    let next = gate.nextCell;
    if (!gate.cellWaiters.length) {
      const sent = this.sendNow(endpoint, gate, options.share);
      if (sent.now) return null;
      next = sent.at;
    }
    const estimate = () => Math.max(this.now(), next ?? 0) + gate.cellWaiters.ahead(options.rank) * this.interval(gate, options);
    const until = Math.min(this.now() + LOCAL_WAIT_MS, options.notAfter ?? Infinity);
    if (estimate() > until) return this.told(gate, options.rank, estimate());
    const served = () => this.serveCells(endpoint, gate, options.share);
    if (await this.waitInQueue(gate.cellWaiters, until - this.now(), options, served)) return null;
    next = gate.nextCell;
    return this.told(gate, options.rank, estimate());
  }

  /** Lets those waiting here go, one per cell of the strict bound, the first by rank first. */
  private serveCells(endpoint: string, gate: Gate, share: number): void {
    if (gate.nextCell) return;
    while (gate.cellWaiters.length) {
      const sent = this.sendNow(endpoint, gate, share);
      if (!sent.now) {
        gate.nextCell = sent.at;
        setTimeout(() => {
          gate.nextCell = null;
          this.serveCells(endpoint, gate, share);
        }, sent.at - this.now());
        return;
      }
      gate.cellWaiters.shift()!();
    }
  }

  /** The strict bound lets one attempt go now, or says when it may. */
  private sendNow(endpoint: string, gate: Gate, share: number): Grant {
    if (!gate.rate) return { now: true };
    const now = this.now();
    const sent = gate.rate.admit(endpoint, now, share);
    if (sent.now) gate.sentUntil = now + 1000 / (gate.rate.options.perSecond * share);
    return sent;
  }

  /** One cell of this worker's share of the rate (ms). */
  private interval(gate: Gate, options: Asking): number {
    return 1000 / (gate.limits.rate! * options.share);
  }

  /** Room in flight now: the attempt goes. Null when the bound is reached, or others wait before it (waitForRoom). */
  private permitNow(gate: Gate, options: Asking): Admission | null {
    const max = gate.limits.maxInFlight;
    if (max === null) return { go: true, release: (d) => this.measure(gate, d) };
    if (gate.inFlight < workerShare(max, options.share) && gate.waiters.length === 0) {
      gate.inFlight++;
      return { go: true, release: (d) => this.release(gate, d) };
    }
    return null;
  }

  /** No room now: a short wait here for an attempt in flight to end, else a turn to come back at. */
  private async waitForRoom(endpoint: string, gate: Gate, options: Asking): Promise<Admission> {
    const max = gate.limits.maxInFlight!;
    const mine = workerShare(max, options.share);
    const wait = Math.min(LOCAL_WAIT_MS, (options.notAfter ?? Infinity) - this.now());
    if (gate.waiters.ahead(options.rank) < mine && wait > 0 && (await this.waitInQueue(gate.waiters, wait, options))) {
      return this.placeAfterWait(endpoint, gate, options);
    }
    // its turn as attempts end, each turn after the last one planned of its rank and those before it: those
    // sent back do not all come at once. A turn that would end after the delivery's expiry is not taken
    const now = this.now();
    const every = gate.meanMs / mine;
    const turn = gate.turns.take(options.rank, now, every, (options.notAfter ?? Infinity) - every);
    return { go: false, at: Math.min(turn.at + every, now + MAX_TURN_MS), reason: IN_FLIGHT };
  }

  /** Waits up to `ms` in `queue`, by rank, to be served; true when it was. `queued`: told once it has joined. */
  private waitInQueue(queue: RankedQueue, ms: number, options: Asking, queued?: () => void): Promise<boolean> {
    const { rank, signal } = options;
    return new Promise((resolve) => {
      const done = (got: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', give);
        resolve(got);
      };
      const waiter = () => done(true);
      const give = () => {
        queue.remove(waiter);
        done(false);
      };
      const timer = setTimeout(give, ms);
      signal?.addEventListener('abort', give, { once: true });
      queue.push(rank, waiter);
      queued?.();
    });
  }

  /**
   * A place that came after a wait: the rate's cell this attempt took before has gone by meanwhile, and
   * attempts let in by answers that come together would go out together, past the rate. It passes the strict
   * bound again, and hands the place on when that says to come back later.
   */
  private async placeAfterWait(endpoint: string, gate: Gate, options: Asking): Promise<Admission> {
    const cell = gate.rate ? await this.strictCell(endpoint, gate, options) : null;
    if (!cell) return { go: true, release: (durationMs) => this.release(gate, durationMs) };
    this.handOn(gate);
    return cell;
  }

  /** An attempt ended: its place goes to the first waiting here, or back to the pool. */
  private release(gate: Gate, durationMs: number): void {
    this.measure(gate, durationMs);
    this.handOn(gate);
  }

  private handOn(gate: Gate): void {
    const next = gate.waiters.shift();
    if (next) next();
    else gate.inFlight--;
  }

  private measure(gate: Gate, durationMs: number): void {
    gate.meanMs = gate.meanMs * 0.9 + Math.max(1, durationMs) * 0.1;
  }

  /** Sleeps until `at` when that is close and not past `notAfter`; false (without sleeping) when it is not. */
  private async waitedFor(at: number, options: Asking): Promise<boolean> {
    const ms = at - this.now();
    if (ms > LOCAL_WAIT_MS || at > (options.notAfter ?? Infinity)) return false;
    await sleep(ms, options.signal);
    return true;
  }
}

/** Why an attempt waits: a slot of the rate (reserved for it), or its turn as attempts in flight end; or is held: the breaker. */
export const RATE = 'rate';
export const IN_FLIGHT = 'in-flight';
export const BREAKER = 'breaker-open';
export const PAUSED = 'endpoint-paused';
export const DISABLED = 'endpoint-disabled';
/** A batch's request with no room before the deadline of a message it carries: each goes on its own, and expires. */
export const NO_ROOM = 'no-room-before-deadline';

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

/** Inserts `value` into the sorted `values`. */
function insertSorted(values: number[], value: number): void {
  values.splice(lowerBound(values, value), 0, value);
}

/** Removes one `value` from the sorted `values`, if there. */
function removeSorted(values: number[], value: number): void {
  const i = lowerBound(values, value);
  if (values[i] === value) values.splice(i, 1);
}

/** The first index whose value is not below `value`. */
function lowerBound(values: readonly number[], value: number): number {
  let [lo, hi] = [0, values.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
