import { DEFAULT_PROBE_EVERY_MS, type EndpointControl } from '../endpoints/controls';
import { sendingWasPossible } from '../endpoints/downtime';
import { extendSpell, spellFailing } from '../endpoints/health';
import type { AttemptOutcome } from '../endpoints/types';

/*
 * The circuit breaker, as one worker applies it (docs/endpoint-health.md, "Circuit breaker"). It is open
 * while the endpoint's workflow judges the endpoint failing (its memo, read by ControlCache), or
 * while this worker's own attempts say so, by the same rule (FAILING_AFTER failures in a row, or a spell of
 * FAILING_AFTER_MS), which it sees seconds before the workflow does. While open, attempts are held, but
 * one probe at a time, at most one per `probeEvery`, from the one worker the workflow names (each worker
 * while none is named); the first attempt that gets through closes it here at once, and for the other
 * workers when the workflow has recorded it.
 */

/** What the breaker says of one attempt. */
export type BreakerCall = 'closed' | 'probe' | 'held';

interface Watch {
  /** Attempts in a row that could not be sent, and since when; zero after one that could. */
  failures: number;
  since: number | null;
  lastSuccessAt: number;
  probing: boolean;
  lastProbeAt: number;
}

export class Breaker {
  private readonly watches = new Map<string, Watch>();

  constructor(
    /** This worker's identity: the workflow names the prober by it. */
    private readonly identity: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether an attempt to `endpoint` may go: the breaker closed, as the probe, or held. A probe must be ended (probeEnded). */
  call(endpoint: string, control: EndpointControl | undefined): BreakerCall {
    if (control?.settings.breaker !== 'on') return 'closed';
    const watch = this.watch(endpoint);
    const now = this.now();
    const remote = control?.breaker?.open === true && watch.lastSuccessAt <= (control.breaker.since ?? 0);
    const local = spellFailing(watch, now);
    if (!remote && !local) return 'closed';
    const prober = remote ? control!.breaker!.prober : null;
    const every = control?.settings.probeEvery ?? DEFAULT_PROBE_EVERY_MS;
    if ((prober !== null && prober !== this.identity) || watch.probing || now - watch.lastProbeAt < every) return 'held';
    watch.probing = true;
    watch.lastProbeAt = now;
    return 'probe';
  }

  /** A probe has ended (its outcome came through attempted): the next may go after `probeEvery`. */
  probeEnded(endpoint: string): void {
    this.watch(endpoint).probing = false;
  }

  /** Every attempt's outcome (an AttemptListener's): a failure extends the spell, one that got through ends it. */
  attempted(endpoint: string, outcome: AttemptOutcome): void {
    const watch = this.watch(endpoint);
    Object.assign(watch, extendSpell(watch, outcome));
    if (sendingWasPossible(outcome)) watch.lastSuccessAt = Math.max(watch.lastSuccessAt, outcome.at);
  }

  private watch(endpoint: string): Watch {
    let watch = this.watches.get(endpoint);
    if (!watch) this.watches.set(endpoint, (watch = { failures: 0, since: null, lastSuccessAt: 0, probing: false, lastProbeAt: 0 }));
    return watch;
  }
}
