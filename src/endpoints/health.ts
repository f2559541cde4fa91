import { sendingWasPossible } from './downtime';
import type { AttemptOutcome } from './types';

/**
 * An endpoint's health as operators read it (docs/endpoint-health.md), from the attempts every worker
 * reports. Pure and plain data: it lives in the endpoint's workflow and travels through continue-as-new.
 *
 * - failing: attempts in a row could not be sent (any failure but a client error: an endpoint that answers
 *   a client error is up), FAILING_AFTER of them or for FAILING_AFTER_MS;
 * - recovering: attempts go through again, but it was failing less than RECOVERY_MS ago: deliveries parked
 *   on it are still draining at the retry budget's pace;
 * - healthy: otherwise.
 */
export type EndpointHealthState = 'healthy' | 'failing' | 'recovering';

export const RECOVERY_MS = 60_000;
/** The failure rate is over this window. */
export const WINDOW_MS = 60_000;

export interface HealthLedger {
  /** Since when the attempts in a row could not be sent (a spell); null while they go through. */
  spellSince: number | null;
  /** Failures in the spell. */
  spellFailures: number;
  /** Since when the endpoint is failing: a spell of FAILING_AFTER failures or FAILING_AFTER_MS. */
  failingSince: number | null;
  /** When attempts went through again after the endpoint was failing. */
  recoveredAt: number | null;
  lastAttemptAt: number | null;
  /** Per second of the last minute with attempts: sent, and failed (client errors not counted as failed). */
  seconds: { second: number; attempts: number; failures: number }[];
}

/**
 * A spell turns the endpoint `failing` after this many failures in a row, or once it has lasted this long:
 * a single 503 among successes is a glitch, not a state (the state would flap, and the UI filter mean little).
 */
export const FAILING_AFTER = 3;

/**
 * A timeout the producer chose below this (ms) is the producer's failure, not the endpoint's: an attempt it
 * ended says nothing of the endpoint, so the endpoint's health, downtime, breaker and auto-disable do not
 * hear of it (the delivery still counts it). A worker setting: REDELIVER_ENDPOINT_TIMEOUT_FLOOR.
 */
export const DEFAULT_TIMEOUT_FLOOR_MS = 1_000;

/**
 * The codes of an attempt its own timeout ended: no answer, no connection (the attempt's deadline ends the connect
 * first: `net-ETIMEDOUT`), no PUBACK. Within a timeout below the floor, none can come from anywhere else.
 */
const TIMEOUT_CODES: ReadonlySet<string> = new Set(['timeout', 'net-ETIMEDOUT', 'mqtt-no-puback']);

/** Whether an attempt that ended `outcome` under the producer's timeout of `timeoutMs` timed out below the floor. */
export function producersTimeout(outcome: Pick<AttemptOutcome, 'code'>, timeoutMs: number, floorMs: number): boolean {
  return timeoutMs < floorMs && TIMEOUT_CODES.has(outcome.code);
}
export const FAILING_AFTER_MS = 5_000;

/** Attempts in a row that could not be sent, and since when (epoch ms; null while they go through). */
export interface FailureSpell {
  failures: number;
  since: number | null;
}

/** Whether a spell makes the endpoint failing at `now`: FAILING_AFTER failures in a row, or one that has lasted FAILING_AFTER_MS. */
export function spellFailing(spell: FailureSpell, now: number): boolean {
  return spell.failures >= FAILING_AFTER || (spell.since !== null && now - spell.since >= FAILING_AFTER_MS);
}

/** The spell after one more attempt: one that got through ends it, a failure extends it. */
export function extendSpell(spell: FailureSpell, outcome: AttemptOutcome): FailureSpell {
  if (sendingWasPossible(outcome)) return { failures: 0, since: null };
  return { failures: spell.failures + (outcome.count ?? 1), since: spell.since ?? outcome.at };
}

export interface EndpointHealth {
  state: EndpointHealthState;
  /** Failed attempts / attempts over the last minute, 0 when none. */
  failureRate: number;
  attemptsLastMinute: number;
  failingSince: number | null;
  recoveredAt: number | null;
  lastAttemptAt: number | null;
}

export function openHealth(): HealthLedger {
  return { spellSince: null, spellFailures: 0, failingSince: null, recoveredAt: null, lastAttemptAt: null, seconds: [] };
}

/** The ledger after `outcomes` (in time order; one older than the latest seen changes counts, not states). */
export function recordHealth(ledger: HealthLedger, outcomes: readonly AttemptOutcome[]): HealthLedger {
  let { spellSince, spellFailures, failingSince, recoveredAt, lastAttemptAt } = ledger;
  const seconds = new Map(ledger.seconds.map((s) => [s.second, { ...s }]));
  for (const o of outcomes) {
    const down = !sendingWasPossible(o);
    const late = lastAttemptAt !== null && o.at < lastAttemptAt;
    const n = o.count ?? 1;
    if (down && !(late && spellSince === null)) {
      spellSince ??= o.at;
      spellFailures += n;
      if (failingSince === null && spellFailing({ failures: spellFailures, since: spellSince }, o.at)) failingSince = spellSince;
    } else if (!down && spellSince !== null && !(late && o.at < spellSince)) {
      if (failingSince !== null) recoveredAt = o.at;
      spellSince = null;
      spellFailures = 0;
      failingSince = null;
    }
    lastAttemptAt = Math.max(lastAttemptAt ?? o.at, o.at);
    const second = Math.floor(o.at / 1000);
    const bucket = seconds.get(second) ?? { second, attempts: 0, failures: 0 };
    bucket.attempts += n;
    if (down) bucket.failures += n;
    seconds.set(second, bucket);
  }
  const newest = lastAttemptAt === null ? 0 : Math.floor(lastAttemptAt / 1000);
  const kept = [...seconds.values()].filter((s) => s.second > newest - WINDOW_MS / 1000).sort((a, b) => a.second - b.second);
  return { spellSince, spellFailures, failingSince, recoveredAt, lastAttemptAt, seconds: kept };
}

/** The health at `now`. */
export function healthAt(ledger: HealthLedger, now: number): EndpointHealth {
  const from = Math.floor((now - WINDOW_MS) / 1000);
  let attempts = 0;
  let failures = 0;
  for (const s of ledger.seconds) {
    if (s.second <= from) continue;
    attempts += s.attempts;
    failures += s.failures;
  }
  // a spell that goes on without further attempts turns into failing by time alone
  const failingSince =
    ledger.failingSince ?? (ledger.spellSince !== null && now - ledger.spellSince >= FAILING_AFTER_MS ? ledger.spellSince : null);
  const state: EndpointHealthState =
    failingSince !== null ? 'failing' : ledger.recoveredAt !== null && now - ledger.recoveredAt < RECOVERY_MS ? 'recovering' : 'healthy';
  return {
    state,
    failureRate: attempts === 0 ? 0 : failures / attempts,
    attemptsLastMinute: attempts,
    failingSince,
    recoveredAt: ledger.recoveredAt,
    lastAttemptAt: ledger.lastAttemptAt,
  };
}
