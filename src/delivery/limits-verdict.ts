import { nextDelay } from '../policy/backoff';
import { sentOnce } from './after-failure';
import type { Delivery, Outcome } from './types';

/**
 * Why the endpoint's limits did not let an attempt go now (docs/endpoint-health.md). `at`: when it may
 * come back; `reservedAt`: the rate's slot reserved for it (come back with it); `held`: the breaker or a
 * pause holds it, and `at` is its own backoff (heldUntil); `expired`: no room before the delivery's expiry;
 * `disabled`: the endpoint is, and the delivery ends rejected; `words` say which.
 */
export interface LimitsRefusal {
  at: number;
  reservedAt: number | null;
  held: boolean;
  expired: boolean;
  disabled: boolean;
  words: string;
}

/** What an attempt held back keeps for when it comes back: its reserved slot, and how many times the breaker held it. */
export interface LimitsHold {
  reservedAt: number | null;
  holds: number;
}

/** A held attempt looks again at least this often: once the breaker closes, the deliveries it held drain within this (at the limits' pace). */
export const HELD_MAX_MS = 30_000;

/**
 * When an attempt held by the breaker comes back: the delivery's own backoff, grown by each hold as if each
 * had been a failed attempt (so a crowd parked on a failing endpoint asks less and less often, as it would
 * retry) up to HELD_MAX_MS, never past its max age or deadline; null when that comes first, and for a
 * message sent once or not at all (telemetry QoS 0). Holds are not attempts: `maxAttempts` does not count them.
 */
export function heldUntil(
  delivery: Pick<Delivery, 'kind' | 'qos' | 'policy'>,
  /** `attempts`: made so far (0 before the first); `holds`: times the breaker held the next one so far. */
  state: { attempts: number; holds: number; previousDelay: number | null; agedFrom: number; now: number },
  random: () => number = Math.random,
): number | null {
  if (sentOnce(delivery)) return null;
  const policy = { ...delivery.policy, maxAttempts: 0, max: Math.min(delivery.policy.max, HELD_MAX_MS) };
  policy.min = Math.min(policy.min, policy.max);
  policy.initial = Math.min(policy.initial, policy.max);
  const { attempts, holds, previousDelay, agedFrom, now } = state;
  const decision = nextDelay(policy, { attempts: attempts + holds + 1, previousDelay, firstAttemptAt: agedFrom, now }, random);
  return decision.retry ? now + decision.delay : null;
}

/** The limits' verdict on an attempt they did not let go: the delivery ends unsent, or the attempt comes back `at`, keeping `hold`. */
export type LimitsVerdict =
  | { end: Extract<Outcome, 'rejected' | 'expired' | 'dropped'>; reason: string }
  | { end: null; at: number; hold: LimitsHold; words: string };

/**
 * The verdict for the first attempt and for a retry alike: a disabled endpoint rejects the delivery (a
 * redrive sends it once enabled), no room before it expires ends it expired (dropped, for a held message
 * sent once or not at all), and otherwise it waits for its room, one more hold counted when the breaker held it.
 * `expiry` names what it runs out at (`deadline`, `max age`) and `lastError` quotes the last failure, when there is one.
 */
export function limitsVerdict(
  delivery: Pick<Delivery, 'kind' | 'qos'>,
  refused: LimitsRefusal,
  attempt: { number: number; holds: number; expiry?: string; lastError?: string },
): LimitsVerdict {
  const { words } = refused;
  const next = `attempt ${attempt.number}`;
  if (refused.disabled) return { end: 'rejected', reason: `${words} (${next} was not sent; redrive it once the endpoint is enabled)` };
  if (refused.expired) {
    if (refused.held && sentOnce(delivery)) return { end: 'dropped', reason: `${words}: telemetry QoS 0 is sent once or not at all` };
    const until = attempt.expiry === undefined ? ' expires' : `'s ${attempt.expiry}`;
    const last = attempt.lastError === undefined ? '' : ` (last error: ${attempt.lastError})`;
    return { end: 'expired', reason: `${words}: ${next} has no room before the delivery${until}${last}` };
  }
  const hold = { reservedAt: refused.reservedAt, holds: attempt.holds + (refused.held ? 1 : 0) };
  return { end: null, at: refused.at, hold, words: `${words} (${next})` };
}
