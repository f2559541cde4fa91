import { FAILING_AFTER_MS, healthAt, RECOVERY_MS, type HealthLedger } from './health';

/** What changes an endpoint by time alone, as its workflow's loop knows it (epoch ms; null: nothing of the kind). */
export interface TimedChanges {
  /** When the outcomes still settling are recorded; null: none are settling. */
  settledAt: number | null;
  /** The recorded health: a spell turns failing, recovering turns healthy. */
  health: HealthLedger;
  /** When the workflow closes if nobody reports before. */
  idleEndsAt: number;
  /** When the dead letters not told yet are due as an event. */
  deadLettersDueAt: number | null;
  /** When the endpoint disables itself for failing too long (`autoDisableAfter`). */
  autoDisableAt: number | null;
}

/**
 * When an endpoint's workflow wakes next if no report comes first: the earliest change still ahead, always
 * after `now`. A change whose time has passed has been seen already (a spell older than FAILING_AFTER_MS is
 * failing by healthAt, though its ledger is only written when an outcome comes): waiting for it again would
 * wake at once, again and again, until the next report (issue 31: 467 events in 90 s after one attempt).
 */
export function nextWake(now: number, c: TimedChanges): number {
  const h = c.health;
  const recovering = healthAt(h, now).state === 'recovering';
  const ahead = [
    c.settledAt,
    h.spellSince !== null && h.failingSince === null ? h.spellSince + FAILING_AFTER_MS : null,
    recovering && h.recoveredAt !== null ? h.recoveredAt + RECOVERY_MS : null,
    c.deadLettersDueAt,
    c.autoDisableAt,
  ].filter((t): t is number => t !== null && t > now);
  // an idle close needs the settling outcomes recorded first; once due, it is taken at the next moment (once: it closes, or starts over)
  const idle = Math.max(c.idleEndsAt, c.settledAt ?? now + 1);
  return Math.min(idle, ...ahead);
}
