import { DEAD_LETTER_WINDOW_MS, deadLetterFields, idToken, mergeTally, type OperationalEvent } from './operational-events';
import type { DeadLetterTally } from './types';

/*
 * Dead letters told per tenant (issue 31): a tenant whose deliveries dead-letter on many endpoints at once
 * made one `deliveries.dead-lettered` event per endpoint (200 endpoints, 200 events and more a minute). The
 * state of one tenant's aggregator: what its endpoints' events reported, told in one event per window. Pure:
 * the workflow that holds it (one per tenant, fed by the endpoints' `announceEvents`) is not written yet.
 */

/** One endpoint's dead-letter event, as it reaches its tenant's aggregator; `eventId` makes a repeat harmless. */
export interface TenantReport {
  eventId: string;
  endpoint: string;
  tally: DeadLetterTally;
}

/** Reports are remembered this long, so that a retried activity's repeat is not counted twice. */
export const SEEN_MS = 10 * 60_000;

export interface TenantEventsCarried {
  seq: number;
  tally?: DeadLetterTally;
  /** Dead letters not told yet, by endpoint. */
  endpoints?: Record<string, number>;
  toldAt?: number;
  /** Event ids reported, with when: kept SEEN_MS. */
  seen: Record<string, number>;
}

/** A tenant's dead letters across its endpoints: the first told at once, then at most one event per window. */
export class TenantDeadLetters {
  private seq: number;
  private tally: DeadLetterTally | undefined;
  private endpoints: Record<string, number>;
  private toldAt: number | undefined;
  private readonly seen: Map<string, number>;

  constructor(
    private readonly tenant: string,
    carried?: TenantEventsCarried,
  ) {
    this.seq = carried?.seq ?? 0;
    this.tally = carried?.tally;
    this.endpoints = { ...carried?.endpoints };
    this.toldAt = carried?.toldAt;
    this.seen = new Map(Object.entries(carried?.seen ?? {}));
  }

  /** An endpoint's event; false (and nothing counted) when its id was reported before. */
  report(r: TenantReport, now: number): boolean {
    if (this.seen.has(r.eventId)) return false;
    this.seen.set(r.eventId, now);
    this.tally = mergeTally(this.tally, r.tally);
    this.endpoints[r.endpoint] = (this.endpoints[r.endpoint] ?? 0) + r.tally.count;
    return true;
  }

  /** When the dead letters not told yet are due (epoch ms), or null when there are none. */
  get dueAt(): number | null {
    if (!this.tally) return null;
    return this.toldAt === undefined ? 0 : this.toldAt + DEAD_LETTER_WINDOW_MS;
  }

  /** The event due at `now`, if any: every endpoint's dead letters since the last one, counted by endpoint. */
  take(now: number): OperationalEvent[] {
    const due = this.dueAt;
    if (!this.tally || due === null || now < due) return [];
    this.seq++;
    const at = this.tally.last.at;
    const event: OperationalEvent = {
      id: `deliveries.dead-lettered.tenant.${idToken(this.tenant)}.${this.seq}.${at}`,
      type: 'deliveries.dead-lettered',
      at,
      data: { endpoint: `tenant:${this.tenant}`, tenant: this.tenant, ...deadLetterFields(this.tally), endpoints: this.endpoints },
    };
    [this.tally, this.endpoints, this.toldAt] = [undefined, {}, now];
    return [event];
  }

  /** Whether the aggregator may end at `now`: nothing to tell, and no report recent enough to be repeated. */
  idle(now: number): boolean {
    for (const [id, at] of this.seen) if (now - at >= SEEN_MS) this.seen.delete(id);
    return this.tally === undefined && this.seen.size === 0;
  }

  carried(): TenantEventsCarried {
    return {
      seq: this.seq,
      ...(this.tally && { tally: this.tally, endpoints: this.endpoints }),
      ...(this.toldAt !== undefined && { toldAt: this.toldAt }),
      seen: Object.fromEntries(this.seen),
    };
  }
}
