import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import type { Client, WorkflowHandle } from '@temporalio/client';
import {
  type CarriedState,
  type DueCursor,
  dueQuery,
  type HandOverWhy,
  type HeldMessage,
  type HoldReport,
  releasedSignal,
  type ReleaseEnd,
  type ReleaseInput,
  waitingFailure,
} from '../contract';
import { afterFailure, attemptRecord, ATTEMPT_LOG_SIZE, verdictOf } from '../delivery/after-failure';
import { attemptError } from '../delivery/attempt-error';
import { expiresAt, expiryName } from '../delivery/summary';
import type { Delivery } from '../delivery/types';
import { pendingActivityHeartbeat, savedHeartbeat } from '../temporal/sdk-adapter';
import { DeliveryStarter } from '../starter/delivery-starter';
import type { EndpointAdmission } from '../worker-services/admission';
import { DEFAULT_RECOVERY_MAX_IN_FLIGHT, type PaceSlot, type RecoveryPacer } from '../worker-services/pacer';
import { activityClock, type AttemptResult } from './deliver';

/*
 * The release of an outage hold (docs/endpoint-health.md, "Outages"): one activity per hold that passes over its
 * messages in the hold's order, each sent as its next attempt when the worker's recovery pacer gives a slot, and
 * reports what became of them to the hold in signals of many. While the endpoint fails the pacer gives no slot: the
 * activity waits on the server (a failure with `nextRetryDelay`, retried by Temporal: no history event) and a probe
 * goes when one is due. A message gets at most one attempt per round; a round that leaves some waiting is followed,
 * after a short wait on the server, by another.
 */

/**
 * Messages asked of the hold at a time: each page is a query through the hold's worker (a second or more on a busy
 * worker), so a page holds many round trips of a full window — a hold's whole content in one or two (at most about
 * 600 KB of small messages: the query's answer stays well under gRPC's 4 MB).
 */
const PAGE = 1_000;
/**
 * Reports are signalled to the hold at least this often while messages leave, and at this many: a signal is four
 * history events (with its workflow task), so these set the hold's events per message (measured at 1 s and 200: 0.115
 * per held message per round, over the target of 0.1). Until then a delivered message's status says it waits.
 */
const FLUSH_EVERY_MS = 3_000;
const FLUSH_AT = 500;
/** Failed attempts alone (nothing left) are kept in the heartbeat for this long before they are signalled. */
const QUIET_FLUSH_MS = 60_000;
/** A round ends after this long, so that the hold can continue as new between rounds. */
const ROUND_MS = 5 * 60_000;
/** A round that left messages waiting (their endpoint answers again) is followed by the next after this. */
const NEXT_ROUND_MS = 2_000;
/** A taken-out message about to be cancelled waits this long first, so that it is not attempted before the cancel comes. */
const CANCEL_GRACE_MS = 60_000;

export interface ReleaseDeps {
  attempt: (delivery: Delivery, attempt: number, clock?: () => number) => Promise<AttemptResult>;
  client: Client | null;
  pacer: RecoveryPacer | null;
  admission?: EndpointAdmission | null;
  random?: () => number;
}

/** What a release round keeps in its heartbeat: where it is in the hold, and the reports not yet signalled. */
interface ReleaseProgress {
  roundStartedAt: number;
  after: DueCursor | null;
  pending: HoldReport[];
  flushedAt: number;
}

export function createReleaseActivities(deps: ReleaseDeps) {
  return {
    async releaseHeld(input: ReleaseInput): Promise<ReleaseEnd> {
      const context = Context.current();
      // every send in flight (at most the pacer's window) listens for the activity's cancellation
      setMaxListeners(DEFAULT_RECOVERY_MAX_IN_FLIGHT * 8, context.cancellationSignal);
      if (!deps.client || !deps.pacer) throw new Error('releasing an outage hold needs the worker’s client and recovery pacer');
      const now = activityClock();
      const saved = savedHeartbeat<ReleaseProgress>(context.info);
      // a new round after a wait starts from the top of the hold; a worker lost mid-round goes on where it was
      const progress: ReleaseProgress = saved ?? { roundStartedAt: now(), after: null, pending: [], flushedAt: now() };
      const round = new ReleaseRound(deps, input, progress, context.info.taskQueue, now);
      const beat = setInterval(() => context.heartbeat(progress), 2_000);
      try {
        return await round.run(context.cancellationSignal);
      } finally {
        clearInterval(beat);
        context.heartbeat(progress);
      }
    },

    async handOverHeld(message: HeldMessage, why: HandOverWhy): Promise<{ deliveryId: string; created: boolean }> {
      if (!deps.client) throw new Error('handing a held message over needs the worker’s client');
      const { info } = Context.current();
      const starter = new DeliveryStarter(deps.client, info.taskQueue);
      const holdId = info.workflowExecution?.workflowId ?? message.batch;
      // an operator's take-out: the attempts the release made of it and has not told the hold yet count too
      const m = why.takenOut && info.workflowExecution ? withReports(message, await unsignalled(deps.client, holdId)) : message;
      return handOver(starter, m, why, { holdId, now: activityClock()() });
    },
  };
}

/**
 * The message as the hold will know it once reports not yet signalled reach it (a round's pending ones, kept in its
 * heartbeat): a probe that failed a minute ago counts, so that the next attempt, here or in its own delivery, has the
 * next number. Reports the hold has already counted change nothing.
 */
export function withReports(m: HeldMessage, pending: readonly HoldReport[]): HeldMessage {
  const reports = pending.filter((r) => r.deliveryId === m.delivery.deliveryId && r.attempt && r.attempt.attempt > m.attempts);
  if (reports.length === 0) return m;
  const last = reports.at(-1)!;
  const log = [...m.attemptLog, ...reports.map((r) => r.attempt!)].slice(-ATTEMPT_LOG_SIZE);
  const lastAttemptAt = Date.parse(last.attempt!.startedAt) + last.attempt!.durationMs;
  return { ...m, attempts: last.attempt!.attempt, lastAttemptAt, attemptLog: log, lastError: last.error ?? m.lastError };
}

/**
 * What the hold's release round has not signalled yet: its pending reports, from the heartbeat Temporal keeps for it
 * (current as of its last probe's end while the endpoint fails, when it waits on the server); none when no round is on.
 */
async function unsignalled(client: Client, holdId: string): Promise<HoldReport[]> {
  const description = await client.workflow.getHandle(holdId).describe();
  const progress = await pendingActivityHeartbeat<ReleaseProgress>(client.options.loadedDataConverter, description, 'releaseHeld');
  return progress?.pending ?? [];
}

/** Starts a held message's own delivery, carrying its attempts: a dead letter if it ended, or waiting with the control applied. */
async function handOver(starter: DeliveryStarter, m: HeldMessage, why: HandOverWhy, { holdId, now }: { holdId: string; now: number }) {
  const { control, reason } = why.takenOut ?? {};
  const nextAttemptAt = why.ended ? null : control === 'cancel' ? now + CANCEL_GRACE_MS : now;
  const carried: CarriedState = {
    run: 1,
    attempts: m.attempts,
    firstAttemptAt: m.firstAttemptAt,
    lastAttemptAt: m.lastAttemptAt,
    nextAttemptAt,
    previousDelay: null,
    lastError: m.lastError,
    attemptLog: m.attemptLog,
    pausedMs: 0,
    pause: control === 'pause' ? { reason: reason ?? 'paused', since: now } : null,
  };
  const { created } = await starter.start(m.delivery, {
    handedOver: { batch: m.batch, hold: holdId, carried, ...(why.ended && { ended: why.ended }) },
  });
  return { deliveryId: m.delivery.deliveryId, created };
}

/** One round over a hold: pages of messages, each sent in a pacer slot, reports gathered and signalled. */
class ReleaseRound {
  private readonly hold: WorkflowHandle;
  private readonly starter: DeliveryStarter;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly flushes: ReportFlusher;
  private delivered = 0;
  private handedOver = 0;
  private stillWaiting = 0;

  constructor(
    private readonly deps: ReleaseDeps,
    private readonly input: ReleaseInput,
    private readonly progress: ReleaseProgress,
    taskQueue: string,
    private readonly now: () => number,
  ) {
    this.hold = deps.client!.workflow.getHandle(input.holdId);
    this.starter = new DeliveryStarter(deps.client!, taskQueue);
    this.flushes = new ReportFlusher(this.progress, (reports) => this.hold.signal(releasedSignal, reports), now);
  }

  async run(signal: AbortSignal): Promise<ReleaseEnd> {
    const { progress } = this;
    // a slot before the first page: while the endpoint fails, a round costs the pacer's answer, not a page of the hold
    const first = await this.slot(signal);
    if ('waitMs' in first) return this.wait(first.waitMs, `${this.input.endpoint} is failing: the next probe`);
    let spare: PaceSlot | null = first;
    try {
      let page = await this.due(progress.after);
      for (;;) {
        if (this.now() - progress.roundStartedAt > ROUND_MS) return await this.end(true);
        // the next page is asked for while this one is sent: a query's round trip through the hold's worker leaves the window busy
        const next = page.next === null ? null : this.due(page.next);
        next?.catch(() => undefined);
        for (const m of page.messages) {
          const slot = spare ?? (await this.slot(signal));
          spare = null;
          if ('waitMs' in slot) return await this.wait(slot.waitMs, `${this.input.endpoint} is failing: the next probe`);
          this.track(this.releaseOne(m, slot));
          this.flushes.soon(false);
        }
        progress.after = page.next;
        if (next === null) break;
        page = await next;
      }
    } finally {
      // a slot taken and not used (an empty hold, or a page that could not be read) goes back: a probe's would stay out
      spare?.sent(null);
    }
    await Promise.all(this.inFlight);
    if (this.stillWaiting > 0) return this.wait(NEXT_ROUND_MS, `${this.stillWaiting} messages still wait: the next round`);
    return this.end(false);
  }

  private due(after: DueCursor | null) {
    return this.hold.query(dueQuery, { limit: PAGE, after });
  }

  /**
   * A pacer slot, or how long to wait for one. While a probe is out the pacer says wait: its outcome comes first,
   * so that a probe that got through opens the window at once rather than after a wait on the server.
   */
  private async slot(signal: AbortSignal): Promise<PaceSlot | { waitMs: number }> {
    for (;;) {
      const slot = await this.deps.pacer!.acquire(this.input.endpoint, signal);
      if (!('waitMs' in slot) || this.inFlight.size === 0) return slot;
      await Promise.all(this.inFlight);
    }
  }

  /** Sends one held message as its next attempt, or hands it over when it expired or ended. */
  private async releaseOne(held: HeldMessage, slot: PaceSlot): Promise<void> {
    const m = withReports(held, this.progress.pending);
    const { delivery } = m;
    const at = this.now();
    const expiry = expiresAt(delivery, m.firstAttemptAt);
    if (expiry !== null && at >= expiry) {
      slot.sent(null);
      const reason = `its ${expiryName(delivery, expiry)} passed while ${delivery.endpoint} was failing${m.lastError ? ` (last error: ${m.lastError.reason})` : ', unsent'}`;
      return this.leave(m, null, undefined, { outcome: 'expired', reason });
    }
    const release = await this.deps.admission?.enter(delivery.endpoint, {
      kind: delivery.kind,
      ...(expiry !== null && { notAfter: expiry }),
    });
    if (release && 'held' in release) {
      slot.sent(null);
      this.stillWaiting++;
      return;
    }
    const attempt = m.attempts + 1;
    let result: AttemptResult;
    try {
      result = await this.deps.attempt(delivery, attempt, this.now);
    } finally {
      release?.(this.now() - at);
    }
    slot.sent({ at: this.now(), ok: result.ok, class: result.ok ? 'success' : result.class, code: result.code }, result.durationMs);
    const record = attemptRecord({
      attempt,
      startedAt: at,
      durationMs: result.durationMs,
      code: result.code,
      ok: result.ok,
      ...verdictOf(result),
    });
    if (result.ok) return this.report({ deliveryId: delivery.deliveryId, attempt: record, now: 'delivered' });
    const ended = this.now();
    const error = attemptError(result, attempt, ended);
    const next = afterFailure(
      delivery,
      result,
      { attempts: attempt, previousDelay: null, agedFrom: m.firstAttemptAt, at: ended },
      this.deps.random ?? Math.random,
    );
    if (!next.end) {
      this.stillWaiting++;
      return this.report({ deliveryId: delivery.deliveryId, attempt: record, error, now: 'waiting' });
    }
    const moved = { ...m, attempts: attempt, lastAttemptAt: ended, lastError: error, attemptLog: [...m.attemptLog, record] };
    return this.leave(moved, record, error, { outcome: next.end, reason: next.reason });
  }

  /** A message that ended here: its own delivery records the end (a dead letter), then the hold lets it go. */
  private async leave(m: HeldMessage, record: HoldReport['attempt'], error: HoldReport['error'], ended: NonNullable<HandOverWhy['ended']>) {
    await handOver(this.starter, m, { ended }, { holdId: this.input.holdId, now: this.now() });
    this.report({ deliveryId: m.delivery.deliveryId, attempt: record, ...(error && { error }), now: 'handed-over' });
  }

  private report(r: HoldReport): void {
    this.progress.pending.push(r);
    if (r.now === 'delivered') this.delivered++;
    if (r.now === 'handed-over') this.handedOver++;
  }

  private track(p: Promise<void>): void {
    const tracked = p.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async end(waiting: boolean): Promise<ReleaseEnd> {
    await Promise.all(this.inFlight);
    await this.flushes.settle(true);
    return { delivered: this.delivered, handedOver: this.handedOver, waiting };
  }

  /**
   * Waits on the server before the next round (or probe): what left is signalled now; failed attempts alone wait in
   * the heartbeat, unless they have for a minute (a long outage's probes cost the hold an event a minute, not a second).
   */
  private async wait(ms: number, why: string): Promise<never> {
    await Promise.all(this.inFlight);
    const gone = this.progress.pending.some((r) => r.now !== 'waiting');
    await this.flushes.settle(gone);
    Object.assign(this.progress, { after: null, roundStartedAt: this.now() });
    throw waitingFailure(Math.max(1, ms), `${why} in ${Math.round(ms / 100) / 10} s`);
  }
}

/**
 * The reports of a round, signalled to the hold in the background while messages go out (one signal in flight): when
 * many gathered, when messages left a second ago, or when failures alone waited a minute. A report stays in the
 * progress (the heartbeat, and withReports) until its signal was taken; a retried signal's reports are taken once.
 */
class ReportFlusher {
  private flushing: Promise<void> | null = null;
  private failed: unknown = null;

  constructor(
    private readonly progress: ReleaseProgress,
    private readonly send: (reports: HoldReport[]) => Promise<void>,
    private readonly now: () => number,
  ) {}

  /** Starts a signal when one is due and none is in flight; a signal that failed fails the round here. */
  soon(all: boolean): void {
    if (this.failed) throw this.failed;
    if (this.flushing || !this.isDue(all)) return;
    this.flushing = this.signal().finally(() => (this.flushing = null));
    this.flushing.catch((err: unknown) => (this.failed = err));
  }

  /** Signals what is due now, after the one in flight. */
  async settle(all: boolean): Promise<void> {
    await this.flushing;
    if (this.failed) throw this.failed;
    if (this.isDue(all)) await this.signal();
  }

  private isDue(all: boolean): boolean {
    const { pending, flushedAt } = this.progress;
    if (pending.length === 0) return false;
    const since = this.now() - flushedAt;
    const gone = pending.some((r) => r.now !== 'waiting');
    return all || pending.length >= FLUSH_AT || (gone && since >= FLUSH_EVERY_MS) || since >= QUIET_FLUSH_MS;
  }

  private async signal(): Promise<void> {
    const { pending } = this.progress;
    const count = pending.length;
    await this.send(pending.slice(0, count));
    pending.splice(0, count);
    this.progress.flushedAt = this.now();
  }
}
