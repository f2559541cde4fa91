import { sendingWasPossible } from './downtime';
import type { AttemptOutcome } from './types';

/**
 * An endpoint's health as operators read it (docs/endpoint-health.md), from the attempts every worker
 * reports. Pure and plain data: it lives in the endpoint's workflow and travels through continue-as-new.
 *
 * - failing: the last attempt could not be sent (any failure but a client error: the endpoint answered a
 *   client error, so it is up);
 * - recovering: attempts go through again, but it was failing less than RECOVERY_MS ago: deliveries parked
 *   on it are still draining at the retry budget's pace;
 * - healthy: otherwise.
 */
export type EndpointHealthState = 'healthy' | 'failing' | 'recovering';

export const RECOVERY_MS = 60_000;
/** The failure rate is over this window. */
export const WINDOW_MS = 60_000;

export interface HealthLedger {
  /** Since when attempts fail; null while they go through. */
  failingSince: number | null;
  /** When attempts went through again after failing. */
  recoveredAt: number | null;
  lastAttemptAt: number | null;
  /** Per second of the last minute with attempts: sent, and failed (client errors not counted as failed). */
  seconds: { second: number; attempts: number; failures: number }[];
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
  return { failingSince: null, recoveredAt: null, lastAttemptAt: null, seconds: [] };
}

/** The ledger after `outcomes` (in time order). */
export function recordHealth(ledger: HealthLedger, outcomes: readonly AttemptOutcome[]): HealthLedger {
  let { failingSince, recoveredAt, lastAttemptAt } = ledger;
  const seconds = new Map(ledger.seconds.map((s) => [s.second, { ...s }]));
  for (const o of outcomes) {
    const down = !sendingWasPossible(o);
    if (down) failingSince ??= o.at;
    else if (failingSince !== null) {
      failingSince = null;
      recoveredAt = o.at;
    }
    lastAttemptAt = Math.max(lastAttemptAt ?? o.at, o.at);
    const second = Math.floor(o.at / 1000);
    const bucket = seconds.get(second) ?? { second, attempts: 0, failures: 0 };
    bucket.attempts++;
    if (down) bucket.failures++;
    seconds.set(second, bucket);
  }
  const newest = lastAttemptAt === null ? 0 : Math.floor(lastAttemptAt / 1000);
  const kept = [...seconds.values()].filter((s) => s.second > newest - WINDOW_MS / 1000).sort((a, b) => a.second - b.second);
  return { failingSince, recoveredAt, lastAttemptAt, seconds: kept };
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
  const state: EndpointHealthState =
    ledger.failingSince !== null ? 'failing' : ledger.recoveredAt !== null && now - ledger.recoveredAt < RECOVERY_MS ? 'recovering' : 'healthy';
  return {
    state,
    failureRate: attempts === 0 ? 0 : failures / attempts,
    attemptsLastMinute: attempts,
    failingSince: ledger.failingSince,
    recoveredAt: ledger.recoveredAt,
    lastAttemptAt: ledger.lastAttemptAt,
  };
}
