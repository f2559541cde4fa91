import { DEAD_LETTER_WINDOW_MS, deadLetterFields, idToken, mergeTally, type OperationalEvent } from './operational-events';
import type { DeadLetterTally } from './types';

/*
 * Dead letters told per tenant (issue 31): a tenant whose deliveries dead-letter on many endpoints at once
 * made one `deliveries.dead-lettered` event per endpoint (200 endpoints, 200 events and more a minute). The
 * state of one tenant's aggregator (tenantEventsWorkflow, one per tenant): the dead letters workers
 * reported, told in one event per window with their counts by endpoint. Pure and plain data, so a replay
 * decides the same events with the same ids, hence the same deliveries.
 */

/** A worker's dead letters of one tenant, as they reach its aggregator; `id` makes a repeated signal harmless. */
export interface TenantReport {
  id: string;
  tally: DeadLetterTally;
  /** The same dead letters, counted by endpoint. */
  endpoints: Record<string, number>;
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

  /** A worker's report; false (and nothing counted) when its id was reported before. */
  report(r: TenantReport, now: number): boolean {
    if (this.seen.has(r.id)) return false;
    this.seen.set(r.id, now);
    this.tally = mergeTally(this.tally, r.tally);
    for (const [endpoint, n] of Object.entries(r.endpoints)) this.endpoints[endpoint] = (this.endpoints[endpoint] ?? 0) + n;
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

  /** When the aggregator has something to do by time alone (an event due, a report id to forget), or null: it may end. */
  wakeAt(now: number): number | null {
    if (this.idle(now)) return null;
    // reports are remembered in the order they came: the first is the first to forget
    const oldest = this.seen.values().next().value;
    return Math.min(this.dueAt ?? Infinity, oldest === undefined ? Infinity : oldest + SEEN_MS);
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
