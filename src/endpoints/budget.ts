/**
 * The per-endpoint retry budget: a bound on the rate of retries sent to one endpoint, across every
 * delivery a worker runs (docs/endpoint-health.md). In the spirit of gRPC's retry throttling and the AWS
 * SDK's retry quota, but for a durable orchestrator: a retry that finds no room is not dropped, it gets
 * a reserved slot in the future and waits for it on the server (an activity retry's backoff). Reserving slots one after another
 * is what drains a crowd of parked deliveries at the budget's pace once the endpoint recovers, instead
 * of all at once.
 *
 * The bound is a generic cell rate (GCRA): over any window of W seconds at most `burst + W × perSecond`
 * retries go out. First attempts are not held: they are the producer's own rate.
 */

export interface RetryBudgetOptions {
  /** Retries per second to one endpoint, for all workers together. */
  perSecond: number;
  /** Retries that may go out at once on top of the rate. */
  burst: number;
}

/** Every so many reservations, endpoints whose slots have all passed are forgotten. */
const PRUNE_EVERY = 10_000;

export const DEFAULT_RETRY_BUDGET: RetryBudgetOptions = { perSecond: 10, burst: 20 };

/** When a retry may go out: now, or at a reserved time (epoch ms). */
export type Grant = { now: true } | { now: false; at: number };

/**
 * The budgets of one worker, one per endpoint. With N workers each takes 1/N of the rate and of the
 * burst (`share`), so the bound holds for all of them together.
 */
export class RetryBudget {
  /** Theoretical arrival time of the next reservation, per endpoint (epoch ms). */
  private readonly next = new Map<string, number>();
  /** The same for retries actually sent: timers that fire late can bunch reserved slots together. */
  private readonly sent = new Map<string, number>();
  private calls = 0;

  constructor(readonly options: RetryBudgetOptions = DEFAULT_RETRY_BUDGET) {
    if (!(options.perSecond > 0)) throw new RangeError(`retryBudget.perSecond must be above 0, got ${options.perSecond}`);
    if (!(options.burst >= 1)) throw new RangeError(`retryBudget.burst must be at least 1, got ${options.burst}`);
  }

  /**
   * Reserves a slot for one retry to `endpoint` at `now`: now, or the next free one. `share` is this
   * worker's part of the budget (1/N). Slots are handed out in order, which spreads a crowd of retries.
   */
  acquire(endpoint: string, now: number, share = 1, notAfter = Infinity): Grant {
    if (++this.calls % PRUNE_EVERY === 0) this.prune(now);
    return this.take(this.next, endpoint, now, share, notAfter);
  }

  /**
   * Lets a retry go out at `now`, or says when it may: the strict bound on retries sent. A reserved slot
   * comes due on a Temporal timer, which may fire late and together with others; this keeps those from
   * going out faster than the budget.
   */
  admit(endpoint: string, now: number, share = 1): Grant {
    return this.take(this.sent, endpoint, now, share);
  }

  /**
   * What a retry due at `now` gets, as the retrying activity asks (retryDelivery) and the outage
   * replay does the same (replayOutage): a retry whose reserved slot has come meets only the strict
   * bound; another first takes a slot in the queue (none later than `notAfter`, its expiry), then the bound.
   */
  ask(endpoint: string, now: number, share: number, reserved: boolean, notAfter?: number): Grant {
    const grant = reserved ? ({ now: true } as const) : this.acquire(endpoint, now, share, notAfter);
    return grant.now ? this.admit(endpoint, now, share) : grant;
  }

  /** A slot at or after `now`; one later than `notAfter` (a delivery's expiry) is not taken, only told. */
  private take(cells: Map<string, number>, endpoint: string, now: number, share: number, notAfter = Infinity): Grant {
    const interval = 1000 / (this.options.perSecond * share);
    const tolerance = Math.max(0, this.options.burst * share - 1) * interval;
    const tat = Math.max(cells.get(endpoint) ?? now, now);
    const at = Math.max(now, tat - tolerance);
    // a retry told to come back does not hold on to a slot of the strict bound: it asks again then
    if (at > now && (cells === this.sent || at > notAfter)) return { now: false, at };
    cells.set(endpoint, tat + interval);
    return at <= now ? { now: true } : { now: false, at };
  }

  /** Forgets endpoints whose reservations have all passed (a long-running worker sees many endpoints). */
  prune(now: number): void {
    for (const cells of [this.next, this.sent]) for (const [endpoint, tat] of cells) if (tat < now) cells.delete(endpoint);
  }
}
