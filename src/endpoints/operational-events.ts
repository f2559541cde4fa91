import type { Sinks } from '@temporalio/workflow';
import type { EndpointMode } from './controls';
import type { EndpointHealth, EndpointHealthState } from './health';
import type { DeadLetterOutcome, DeadLetterTally } from './types';

export type { DeadLetterOutcome, DeadLetterTally } from './types';

/*
 * Operational events (docs/endpoint-health.md, "Operational events"): what an endpoint's workflow tells the
 * operator URLs, each event a delivery of its own. Pure and plain data: the workflow decides events here, in
 * history order, so a replay decides the same ones with the same ids.
 */

export type OperationalEventType = 'endpoint.failing' | 'endpoint.recovered' | 'endpoint.disabled' | 'deliveries.dead-lettered';

/** Metric names (docs/endpoint-health.md, "Operational events"): on the worker's Prometheus endpoint with the SDK's own. */
export const METRICS = {
  transitions: 'redeliver_endpoint_transitions_total',
  state: 'redeliver_endpoint_state',
  deadLetters: 'redeliver_dead_letters_total',
  paceWindow: 'redeliver_endpoint_pace_window',
  paceState: 'redeliver_endpoint_pace_state',
} as const;

/** `redeliver_endpoint_state` and `redeliver_endpoint_pace_state`: a number per state, the worse the higher. */
export const STATE_VALUES: Record<EndpointHealthState, number> = { healthy: 0, recovering: 1, failing: 2 };

/** Where a delivery tells its worker it ended a dead letter: a sink, so its history does not change (no command). */
export interface DeadLetterSinks extends Sinks {
  endpoints: {
    deadLettered(endpoint: string, deliveryId: string, outcome: DeadLetterOutcome, at: number, tenant: string): void;
  };
}

/**
 * A storm of dead letters is told in one event per tenant per window, across its endpoints (TenantDeadLetters;
 * the alerts' own dead letters, tenant `redeliver`, per endpoint): the first at once, the rest together when the
 * window since the last one has passed. 30 s: prompt enough to act on, and a storm of any size costs an operator
 * URL at most two events a minute per tenant.
 */
export const DEAD_LETTER_WINDOW_MS = 30_000;

/** One event, as the workflow decided it: its deliveries' body is `envelopeOf(event)`. */
export interface OperationalEvent {
  /** Stable per endpoint and event: the message id of its deliveries, hence their delivery ids and `webhook-id`. */
  id: string;
  type: OperationalEventType;
  /** When it happened (epoch ms): the transition, or the last dead letter told. */
  at: number;
  data: EventFields & { endpoint: string };
}

/** What every event's `data` says besides the endpoint, and what its type adds. */
export interface EventFields {
  state: string;
  /** ISO time: since when the endpoint is in `state`, or the first dead letter told. */
  since: string;
  reason: string;
  [field: string]: unknown;
}

/** The Standard Webhooks envelope an operator URL receives. */
export function envelopeOf(event: OperationalEvent): { type: OperationalEventType; timestamp: string; data: OperationalEvent['data'] } {
  return { type: event.type, timestamp: new Date(event.at).toISOString(), data: event.data };
}

/** Two tallies as one: counts added, the earliest first and the latest last. */
export function mergeTally(a: DeadLetterTally | undefined, b: DeadLetterTally): DeadLetterTally {
  if (!a) return { ...b, outcomes: { ...b.outcomes } };
  const outcomes = { ...a.outcomes };
  for (const [outcome, n] of Object.entries(b.outcomes) as [DeadLetterOutcome, number][]) outcomes[outcome] = (outcomes[outcome] ?? 0) + n;
  return {
    count: a.count + b.count,
    outcomes,
    first: b.first.at < a.first.at ? b.first : a.first,
    last: b.last.at >= a.last.at ? b.last : a.last,
  };
}

/** What an endpoint's workflow carries to its next run about its events. */
export interface EventsCarried {
  /** Events decided so far: each one's id has its number. */
  seq: number;
  /** Dead letters not told yet, and when the last dead-letter event went. */
  deadLetters?: DeadLetterTally;
  deadLettersToldAt?: number;
}

/**
 * The events of one endpoint, decided from its health, its mode and the dead letters reported to it; `take`
 * hands over those due. Ids are `<type>.<endpoint>.<seq>.<at>`: the sequence orders them, the time keeps them
 * apart from a workflow's that closed idle and started again (its sequence starts over).
 */
export class EndpointEvents {
  private seq: number;
  private tally: DeadLetterTally | undefined;
  private toldAt: number | undefined;
  private readonly outbox: OperationalEvent[] = [];

  constructor(
    private readonly endpoint: string,
    carried?: EventsCarried,
  ) {
    this.seq = carried?.seq ?? 0;
    this.tally = carried?.deadLetters;
    this.toldAt = carried?.deadLettersToldAt;
  }

  /** The health the loop found, after `previous`: failing once it turns failing, recovered once it stops. `reason`: the spell's most frequent failure. */
  health(previous: EndpointHealthState | null, h: EndpointHealth, reason: string | null): void {
    if (h.state === 'failing' && previous !== 'failing' && h.failingSince !== null) {
      const rate = `${Math.round(h.failureRate * 100)}% of ${h.attemptsLastMinute} attempts in the last minute failed`;
      this.add('endpoint.failing', h.failingSince, {
        state: 'failing',
        since: iso(h.failingSince),
        reason: reason ? `${reason}; ${rate}` : rate,
        failureRate: h.failureRate,
        attemptsLastMinute: h.attemptsLastMinute,
      });
    } else if (previous === 'failing' && h.state !== 'failing') {
      const at = h.recoveredAt ?? h.lastAttemptAt ?? 0;
      this.add('endpoint.recovered', at, { state: h.state, since: iso(at), reason: 'attempts go through again' });
    }
  }

  /** The endpoint was disabled, by an operator or by itself (auto-disable). */
  disabled(mode: EndpointMode): void {
    this.add('endpoint.disabled', mode.since, { state: 'disabled', since: iso(mode.since), reason: mode.reason, by: mode.by });
  }

  /** Dead letters a worker reported: told at `take` when the window allows. */
  deadLettered(tally: DeadLetterTally): void {
    this.tally = mergeTally(this.tally, tally);
  }

  /** When dead letters not told yet are due (epoch ms), or null when there are none. */
  get deadLettersDueAt(): number | null {
    if (!this.tally) return null;
    return this.toldAt === undefined ? 0 : this.toldAt + DEAD_LETTER_WINDOW_MS;
  }

  /** The events due at `now`, in the order they were decided, and forgets them. */
  take(now: number): OperationalEvent[] {
    const due = this.deadLettersDueAt;
    if (this.tally && due !== null && now >= due) {
      this.add('deliveries.dead-lettered', this.tally.last.at, deadLetterFields(this.tally));
      this.tally = undefined;
      this.toldAt = now;
    }
    return this.outbox.splice(0);
  }

  carried(): EventsCarried {
    return {
      seq: this.seq,
      ...(this.tally && { deadLetters: this.tally }),
      ...(this.toldAt !== undefined && { deadLettersToldAt: this.toldAt }),
    };
  }

  private add(type: OperationalEventType, at: number, data: EventFields): void {
    this.seq++;
    this.outbox.push({ id: `${type}.${idToken(this.endpoint)}.${this.seq}.${at}`, type, at, data: { endpoint: this.endpoint, ...data } });
  }
}

/** What a `deliveries.dead-lettered` event says of a tally: its counts, by outcome, and its first and last. */
export function deadLetterFields(t: DeadLetterTally): EventFields {
  return {
    state: 'dead-lettered',
    since: iso(t.first.at),
    reason: Object.entries(t.outcomes)
      .map(([outcome, n]) => `${n} ${outcome}`)
      .join(', '),
    count: t.count,
    outcomes: t.outcomes,
    firstDeliveryId: t.first.deliveryId,
    lastDeliveryId: t.last.deliveryId,
    until: iso(t.last.at),
    windowMs: DEAD_LETTER_WINDOW_MS,
  };
}

/** The endpoint as a part of a message id: printable ASCII without `/`, `+`, `#` or whitespace, at most 100 characters. */
export function idToken(endpoint: string): string {
  return endpoint.replace(/[^A-Za-z0-9.:[\]_-]/g, '_').slice(0, 100);
}

function iso(t: number): string {
  return new Date(t).toISOString();
}
