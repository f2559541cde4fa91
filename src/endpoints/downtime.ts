/**
 * The downtime ledger of one endpoint, by the Bosch IoT Hub retry guide: "If the repeated sending of a
 * device message is not possible for a period longer than one minute, then this time is considered as
 * downtime", and "a minimum of three connection attempts within at least three minutes needs to be
 * considered as reconnection time and not as downtime".
 *
 * The rule we decided on, from attempt outcomes given in time order:
 * - Sending is possible when an attempt got through, or was refused as a `client` error: the endpoint
 *   answered and processed it, so it is up. `well-known` (throttled), `server` and `connection` failures
 *   mean sending was not possible.
 * - A spell starts at the first failure after a possible attempt (or after the ledger opened) and ends at
 *   the next possible attempt; its duration is end − start, never negative (times that go backwards, e.g.
 *   between two workers' clocks, are clamped to the latest time seen).
 * - An ended spell is a glitch when it lasted no longer than the threshold (1 min); a reconnection when all
 *   its failures were `connection` ones, it lasted no longer than the reconnection window (3 min) and it
 *   saw at least 3 attempts, the one that got through included; otherwise downtime, counted whole (the
 *   guide counts "this time", not what exceeds the minute).
 * - The spell going on counts as downtime once it is longer than the threshold and can no longer become a
 *   reconnection (a failure other than `connection`, or longer than the window).
 *
 * Pure and deterministic (workflow code): times are given, never read; the ledger is plain JSON data that
 * travels through continue-as-new; every change returns a new ledger.
 */
import { DEFAULT_DOWNTIME_THRESHOLD_MS } from '../subscription/downtime';
import type { AttemptOutcome, CurrentSpell, EndpointDowntimePeriod, EndpointDowntimeReport } from './types';

/** Ended downtime periods a ledger keeps one by one; older ones still count in its total. */
export const KEPT_ENDPOINT_PERIODS = 200;
/** Distinct failure codes a spell counts, to name its reason; more are rare and would only grow the state. */
const KEPT_CODES = 20;

export interface EndpointLedgerSettings {
  /** A spell not longer than this is a glitch, not downtime. Default 1 min, as the guide defines it. */
  thresholdMs: number;
  /** A spell of connection failures not longer than this can be a reconnection. Default 3 min (the guide). */
  reconnectWindowMs: number;
  /** The attempts a reconnection needs at least, the one that got through included. Default 3 (the guide). */
  reconnectAttempts: number;
}

export type EndpointLedgerOptions = Partial<EndpointLedgerSettings>;

export const DEFAULT_ENDPOINT_LEDGER_SETTINGS: Readonly<EndpointLedgerSettings> = {
  thresholdMs: DEFAULT_DOWNTIME_THRESHOLD_MS,
  reconnectWindowMs: 180_000,
  reconnectAttempts: 3,
};

/** A failure code and how often a spell saw it; an array, not an object, to keep first-seen order. */
export interface CodeCount {
  code: string;
  count: number;
}

/** Failures since the last possible attempt. */
export interface Spell {
  from: number;
  failures: number;
  /** Every failure was a `connection` one: the spell may still be a reconnection. */
  onlyConnection: boolean;
  codes: CodeCount[];
}

export interface EndedPeriod {
  from: number;
  to: number;
  attempts: number;
  failures: number;
  reason: string;
}

/** The downtime accounting of one endpoint, as plain data. */
export interface EndpointLedger extends EndpointLedgerSettings {
  openedAt: number;
  /** The latest attempt time seen: earlier times are clamped to it. */
  lastAt: number;
  /** The spell going on; null while sending is possible. */
  spell: Spell | null;
  /** Downtime of all ended periods, the dropped ones too. */
  totalMs: number;
  /** The last KEPT_ENDPOINT_PERIODS ended downtime periods, oldest first. */
  periods: EndedPeriod[];
  /** Where the latest dropped period ended: reports from before then are incomplete. Null if none was dropped. */
  droppedUntil: number | null;
  glitches: number;
  reconnections: number;
}

type SpellKind = 'glitch' | 'reconnection' | 'downtime';

/** A ledger for an endpoint from `at`: no spell until the first failure. Throws on an invalid option. */
export function openEndpointLedger(options: EndpointLedgerOptions, at: number): EndpointLedger {
  const settings = { ...DEFAULT_ENDPOINT_LEDGER_SETTINGS, ...definedOnly(options) };
  requireThat(
    'thresholdMs',
    settings.thresholdMs,
    Number.isFinite(settings.thresholdMs) && settings.thresholdMs >= 0,
    'a finite number of ms ≥ 0',
  );
  requireThat(
    'reconnectWindowMs',
    settings.reconnectWindowMs,
    Number.isFinite(settings.reconnectWindowMs) && settings.reconnectWindowMs >= 0,
    'a finite number of ms ≥ 0',
  );
  requireThat(
    'reconnectAttempts',
    settings.reconnectAttempts,
    Number.isInteger(settings.reconnectAttempts) && settings.reconnectAttempts >= 1,
    'a whole number ≥ 1',
  );
  requireThat('at', at, Number.isFinite(at), 'a time in epoch ms');
  return { ...settings, openedAt: at, lastAt: at, spell: null, totalMs: 0, periods: [], droppedUntil: null, glitches: 0, reconnections: 0 };
}

/** The ledger after `outcomes`, which follow the ones recorded before and are in time order. */
export function recordOutcomes(ledger: EndpointLedger, outcomes: readonly AttemptOutcome[]): EndpointLedger {
  return outcomes.reduce(recordOutcome, ledger);
}

/** The ledger after one more attempt. */
export function recordOutcome(ledger: EndpointLedger, outcome: AttemptOutcome): EndpointLedger {
  // an outcome from before the latest one seen (a late report, a worker's clock behind) cannot change
  // what came after it: it neither opens a spell after a later success, nor ends one that began after it
  const late = Number.isFinite(outcome.at) && outcome.at < ledger.lastAt && ledger.lastAt > ledger.openedAt;
  // clamping keeps every spell non-negative
  const at = Number.isFinite(outcome.at) ? Math.max(outcome.at, ledger.lastAt) : ledger.lastAt;
  const moved = at === ledger.lastAt ? ledger : { ...ledger, lastAt: at };
  if (sendingWasPossible(outcome))
    return ledger.spell && !(late && outcome.at < ledger.spell.from) ? endSpell(moved, ledger.spell, at) : moved;
  if (late && !ledger.spell) return moved;
  return { ...moved, spell: withFailure(ledger.spell ?? { from: at, failures: 0, onlyConnection: true, codes: [] }, outcome) };
}

/** The endpoint answered: it delivered, or refused the message itself (a client error), so it is up. */
export function sendingWasPossible(outcome: AttemptOutcome): boolean {
  return outcome.ok || outcome.class === 'success' || outcome.class === 'client';
}

/**
 * What an operator reads at `now`. With `since`, periods that ended before it are left out and one that
 * straddles it is clipped to it (its attempts and failures stay whole); the total is then the sum of what
 * is reported, and `complete` says whether the ledger still kept every period after `since`.
 */
export function endpointDowntimeReport(ledger: EndpointLedger, now: number, since?: number): EndpointDowntimeReport {
  const start = Math.max(since ?? ledger.openedAt, ledger.openedAt);
  const periods = ledger.periods.filter((p) => p.to > start).map((p) => reportPeriod(p, start));
  const endedMs = start === ledger.openedAt ? ledger.totalMs : periods.reduce((sum, p) => sum + p.durationMs, 0);
  const current = ledger.spell ? currentSpell(ledger, ledger.spell, now) : null;
  const currentMs = ledger.spell && current?.countsAsDowntime ? Math.max(0, now - Math.max(ledger.spell.from, start)) : 0;
  return {
    thresholdMs: ledger.thresholdMs,
    reconnectWindowMs: ledger.reconnectWindowMs,
    reconnectAttempts: ledger.reconnectAttempts,
    since: iso(start),
    totalMs: endedMs + currentMs,
    periods,
    glitches: ledger.glitches,
    reconnections: ledger.reconnections,
    current,
    complete: ledger.droppedUntil === null || ledger.droppedUntil <= start,
  };
}

function withFailure(spell: Spell, outcome: AttemptOutcome): Spell {
  return {
    from: spell.from,
    failures: spell.failures + (outcome.count ?? 1),
    onlyConnection: spell.onlyConnection && outcome.class === 'connection',
    codes: countCode(spell.codes, outcome.code, outcome.count ?? 1),
  };
}

function countCode(codes: CodeCount[], code: string, n: number): CodeCount[] {
  const i = codes.findIndex((c) => c.code === code);
  if (i >= 0) return codes.map((c, j) => (j === i ? { code, count: c.count + n } : c));
  return codes.length < KEPT_CODES ? [...codes, { code, count: n }] : codes;
}

/** The most frequent code, the first seen on a tie. */
function reasonOf(spell: Spell): string {
  let best: CodeCount | undefined;
  for (const c of spell.codes) if (!best || c.count > best.count) best = c;
  return best?.code ?? 'unknown';
}

/** The guide's verdict on a spell that lasted `durationMs` with `attempts` attempts. */
function kindOf(settings: EndpointLedgerSettings, spell: Spell, durationMs: number, attempts: number): SpellKind {
  if (durationMs <= settings.thresholdMs) return 'glitch';
  if (spell.onlyConnection && durationMs <= settings.reconnectWindowMs && attempts >= settings.reconnectAttempts) return 'reconnection';
  return 'downtime';
}

function endSpell(ledger: EndpointLedger, spell: Spell, to: number): EndpointLedger {
  const ended = { ...ledger, spell: null };
  const durationMs = Math.max(0, to - spell.from);
  const attempts = spell.failures + 1;
  const kind = kindOf(ledger, spell, durationMs, attempts);
  if (kind === 'glitch') return { ...ended, glitches: ledger.glitches + 1 };
  if (kind === 'reconnection') return { ...ended, reconnections: ledger.reconnections + 1 };
  const all = [...ledger.periods, { from: spell.from, to, attempts, failures: spell.failures, reason: reasonOf(spell) }];
  const dropped = all.length - KEPT_ENDPOINT_PERIODS;
  return {
    ...ended,
    totalMs: ledger.totalMs + durationMs,
    periods: dropped > 0 ? all.slice(dropped) : all,
    droppedUntil: dropped > 0 ? all[dropped - 1]!.to : ledger.droppedUntil,
  };
}

function currentSpell(settings: EndpointLedgerSettings, spell: Spell, now: number): CurrentSpell {
  const durationMs = Math.max(0, now - spell.from);
  // more attempts may still make it a reconnection, so the attempt count does not matter yet
  const mayReconnect = spell.onlyConnection && durationMs <= settings.reconnectWindowMs;
  return {
    since: iso(spell.from),
    durationMs,
    attempts: spell.failures,
    failures: spell.failures,
    reason: reasonOf(spell),
    countsAsDowntime: durationMs > settings.thresholdMs && !mayReconnect,
  };
}

function reportPeriod(period: EndedPeriod, start: number): EndpointDowntimePeriod {
  const from = Math.max(period.from, start);
  return {
    from: iso(from),
    to: iso(period.to),
    durationMs: period.to - from,
    attempts: period.attempts,
    failures: period.failures,
    reason: period.reason,
  };
}

/** Options given as undefined take the default, as if left out. */
function definedOnly(options: EndpointLedgerOptions): EndpointLedgerOptions {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}

function requireThat(name: string, value: number, ok: boolean, what: string): void {
  if (!ok) throw new RangeError(`${name} must be ${what}, got ${String(value)}`);
}

function iso(t: number): string {
  return new Date(t).toISOString();
}
