import {
  type AttemptFailureDetails,
  Attempts,
  type AttemptSuccess,
  type CarriedState,
  DeliveryState,
  type FirstAttempt,
  LastErrorClass,
  type OrderingNotice,
  type RetryEnd,
  type RetryInput,
  type RetryProgress,
  type StartPlace,
} from '../contract';
import type { ErrorClass } from '../classify/types';
import { afterFailure, logAttempt, verdictOf } from '../delivery/after-failure';
import { attemptError } from '../delivery/attempt-error';
import { refusal } from '../errors';
import { describePolicy } from '../policy/describe';
import { expiresAt, humanDuration, waitingSummary } from '../delivery/summary';
import type {
  AttemptError,
  AttemptRecord,
  Delivery,
  DeliveryResult,
  DeliveryStateName,
  DeliveryStatus,
  OrderingPlace,
  Outcome,
} from '../delivery/types';
import { Shown, type WorkflowEffects } from './visibility';

/** What the tracker needs from its workflow; tests give their own. */
export interface DeliveryEnv {
  effects: WorkflowEffects;
  /** Default Date.now: in a workflow, the time of the current workflow task. */
  now?: () => number;
  /** Default Math.random: in a workflow, a generator seeded per run. */
  random?: () => number;
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/**
 * One delivery's state and its transitions, without Temporal: what the `status` query reads, what the
 * controls change, what an attempt's outcome decides, and what goes to the next run. The workflow
 * (deliveryWorkflow) calls it from its handlers and its loop; search attributes go through `effects`,
 * so which upsert happens when (a command on replay) is decided here, and tested in test/unit/.
 */
export class DeliveryTracker {
  readonly run: number;
  private readonly shown: Shown<DeliveryStateName>;
  private readonly effects: WorkflowEffects;
  private readonly now: () => number;
  private readonly random: () => number;
  private attempts: number;
  private firstAttemptAt: number | null;
  private lastAttemptAt: number | null;
  private nextAttemptAt: number | null;
  private previousDelay: number | null;
  private lastError: AttemptError | null;
  private attemptLog: AttemptRecord[];
  private pausedMs: number;
  private pausedBy: { reason: string; since: number } | null;
  private retryAsked = false;
  /** What the LastErrorClass search attribute says (carried over by continue-as-new with the other attributes). */
  private searchedClass: ErrorClass | undefined;
  /** Whether the planned wait is a server's hint (Retry-After). */
  private hinted = false;
  /** An ordered delivery's place on its key (docs/ordering.md); null for the others. */
  private readonly ordering: OrderingPlace | null;

  constructor(
    readonly delivery: Delivery,
    carried: CarriedState | undefined,
    env: DeliveryEnv,
    place?: StartPlace,
  ) {
    this.effects = env.effects;
    this.now = env.now ?? Date.now;
    this.random = env.random ?? Math.random;
    // an ordered delivery that starts behind others of its key starts queued (its search attribute says so too)
    const queued = !carried && place !== undefined && place.position > 0;
    this.shown = new Shown<DeliveryStateName>(
      carried ? (carried.pause ? 'paused' : 'waiting') : queued ? 'queued' : 'pending',
      this.effects,
    );
    this.run = carried?.run ?? 1;
    this.attempts = carried?.attempts ?? 0;
    this.firstAttemptAt = carried?.firstAttemptAt ?? null;
    this.lastAttemptAt = carried?.lastAttemptAt ?? null;
    this.nextAttemptAt = carried?.nextAttemptAt ?? null;
    this.previousDelay = carried?.previousDelay ?? null;
    this.lastError = carried?.lastError ?? null;
    this.attemptLog = [...(carried?.attemptLog ?? [])];
    this.pausedMs = carried?.pausedMs ?? 0;
    this.pausedBy = carried?.pause ?? null;
    this.searchedClass = this.lastError?.class;
    // a run continued as new had its turn
    const key = delivery.orderingKey;
    this.ordering = key === undefined ? null : { key, admitted: carried !== undefined, behind: place?.behind ?? null, blockedBy: null };
    if (queued) this.shown.describe(this.queuedWords());
  }

  get paused(): boolean {
    return this.pausedBy !== null;
  }

  /** Its turn on its ordering key has come (always, for a delivery without one). */
  get admitted(): boolean {
    return this.ordering?.admitted ?? true;
  }

  /** An operator asked for the next attempt now (retryNow), and the loop has not acted on it yet. */
  get retryRequested(): boolean {
    return this.retryAsked;
  }

  status(): DeliveryStatus {
    const { delivery: d, pausedBy: pause } = this;
    return {
      deliveryId: d.deliveryId,
      messageId: d.messageId,
      kind: d.kind,
      qos: d.qos,
      tenant: d.tenant,
      device: d.device,
      endpoint: d.endpoint,
      state: this.shown.state,
      attempts: this.attempts,
      firstAttemptAt: iso(this.firstAttemptAt),
      lastAttemptAt: iso(this.lastAttemptAt),
      nextAttemptAt: pause ? null : iso(this.nextAttemptAt),
      lastError: this.lastError,
      attemptLog: [...this.attemptLog],
      summary: this.shown.summary,
      policy: describePolicy(d.policy),
      pause: pause && { reason: pause.reason, since: new Date(pause.since).toISOString() },
      ...(this.ordering && { ordering: { ...this.ordering } }),
    };
  }

  carried(): CarriedState {
    const { run, attempts, firstAttemptAt, lastAttemptAt, nextAttemptAt, previousDelay, lastError, attemptLog, pausedMs } = this;
    const pause = this.pausedBy;
    return { run: run + 1, attempts, firstAttemptAt, lastAttemptAt, nextAttemptAt, previousDelay, lastError, attemptLog, pausedMs, pause };
  }

  // the controls: a validator (throws the refusal the client reports) and the change itself

  checkRetryNow(): void {
    if (this.pausedBy) throw refusal('NotWaiting', 'the delivery is paused: resume it first');
    if (!this.admitted) {
      const behind = this.ordering!.behind ?? 'earlier deliveries';
      const message = `the delivery is queued behind ${behind} on its ordering key ${this.ordering!.key}: it goes when every earlier one has ended`;
      throw refusal('NotWaiting', message);
    }
    const state = this.shown.state;
    if (state !== 'waiting') {
      throw refusal('NotWaiting', `the delivery is not waiting (it is ${state})`);
    }
  }

  retryNow(): void {
    this.retryAsked = true;
  }

  checkPause(): void {
    if (this.pausedBy) throw refusal('AlreadyPaused', 'the delivery is already paused');
  }

  pause(reason: string): void {
    this.pausedBy = { reason: reason || 'paused by an operator', since: this.now() };
    const queued = this.shown.state === 'queued' ? ` (${this.queuedWords()})` : '';
    if (this.shown.state === 'waiting' || queued) this.setState('paused', `paused: ${this.pausedBy.reason}${queued}`);
  }

  checkResume(): void {
    if (!this.pausedBy) throw refusal('NotPaused', 'the delivery is not paused');
  }

  /** Paused time does not age the delivery: it is added to what the max age is counted from. */
  resume(): DeliveryStatus {
    if (this.pausedBy) this.pausedMs += this.now() - this.pausedBy.since;
    this.pausedBy = null;
    // still queued on its key: shown so again (once admitted, the loop shows what comes next)
    if (!this.admitted && this.shown.state === 'paused') this.setState('queued', this.queuedWords());
    return this.status();
  }

  // an ordered delivery's turn (waitForTurn, docs/ordering.md)

  /** What its key's sequencer says: its turn has come, or what it is queued behind. */
  noticed(notice: OrderingNotice): void {
    const place = this.ordering;
    if (!place || place.admitted) return;
    if (notice.admit) {
      Object.assign(place, { admitted: true, behind: null, blockedBy: null });
      // the search attribute changes when it waits or ends, as a pending delivery's does: no event for the turn itself
      if (!this.pausedBy)
        this.shown.enter('pending', `its turn on the ordering key ${place.key} has come: attempt ${this.attempts + 1} next`);
      return;
    }
    Object.assign(place, { behind: notice.behind, blockedBy: notice.blockedBy });
    if (this.pausedBy) this.shown.describe(`paused: ${this.pausedBy.reason} (${this.queuedWords()})`);
    else this.setState('queued', this.queuedWords());
  }

  /** "queued behind delivery/acme/valve-7/m-41 on the ordering key valve-7" */
  private queuedWords(): string {
    const { key, behind, blockedBy } = this.ordering!;
    if (blockedBy) {
      const dead = `${blockedBy.deliveryId} (${blockedBy.outcome})`;
      return `queued: its ordering key ${key} is stopped by the dead letter ${dead}; it goes once that is redriven and delivered, or the key is released`;
    }
    return `queued behind ${behind ?? 'the earlier deliveries'} on the ordering key ${key}`;
  }

  // waiting for the next attempt

  /** Before a turn: whether the delivery is paused, then shown as waiting for resume. */
  waitsForResume(): boolean {
    if (!this.pausedBy) return false;
    this.setState('paused', `paused: ${this.pausedBy.reason} — attempt ${this.attempts + 1} waits for resume`);
    return true;
  }

  /** Resumed: a retry-now asked while paused is void (the attempt comes at its planned time, or at once if that has passed). */
  resumed(): void {
    this.retryAsked = false;
  }

  /** The wait before the planned attempt, shown as waiting; null when its time has come or a retry-now was asked. */
  waitBeforeTurn(): { ms: number; words: string } | null {
    const remaining = this.nextAttemptAt === null ? 0 : this.nextAttemptAt - this.now();
    if (remaining <= 0 || this.retryAsked) return null;
    const words = this.lastError
      ? this.waitingWords(remaining, this.lastError.code, false)
      : `waiting ${humanDuration(remaining)} — attempt ${this.attempts + 1} next`;
    this.setState('waiting', words);
    return { ms: remaining, words };
  }

  turnTaken(): void {
    this.retryAsked = false;
    this.nextAttemptAt = null;
  }

  /**
   * Expired when its turn comes after the deadline: waits never carry a delivery past it, but a pause can, a
   * queue on its ordering key, or a first attempt that came late (its worker busy). Says which.
   */
  expiredWhilePaused(): DeliveryResult | null {
    const { deadline } = this.delivery.policy;
    if (deadline === null || this.now() <= deadline) return null;
    const passed = `the deadline ${new Date(deadline).toISOString()} passed`;
    // an ordered delivery's turn may come after it: it was queued, unless it was paused too
    if (this.ordering && this.pausedMs === 0) return this.finish('expired', `${passed} while queued on its ordering key`);
    if (this.pausedMs > 0) return this.finish('expired', `${passed} while paused`);
    return this.finish('expired', `${passed} before attempt ${this.attempts + 1} could be sent`);
  }

  // an attempt made by the workflow (the first one, and every one of the timer path)

  startAttempt(): { attempt: number; startedAt: number } {
    const startedAt = this.now();
    this.attempts++;
    this.firstAttemptAt ??= startedAt;
    this.setState('attempting', `attempt ${this.attempts} in progress`);
    return { attempt: this.attempts, startedAt };
  }

  /** The first attempt found no room at its endpoint before the delivery expires (the endpoint's limits, passLimits): it ends unsent. */
  unsent(outcome: Outcome, reason: string): DeliveryResult {
    this.attempts--;
    if (this.attempts === 0) this.firstAttemptAt = null;
    return this.finish(outcome, reason);
  }

  /** A message that ended in an outage hold (DeliveryWorkflowInput.ended): its delivery records that end, its attempts carried. */
  endedInHold(ended: { outcome: Outcome; reason: string }): DeliveryResult {
    return this.finish(ended.outcome, ended.reason);
  }

  delivered(ok: AttemptSuccess, startedAt: number): DeliveryResult {
    this.recordAttempt(startedAt, ok, true);
    return this.finish('delivered', `${ok.reason} on attempt ${this.attempts}`);
  }

  /**
   * A first attempt a batch made (FirstAttempt, in the contract): the delivery starts from it, at the times it was made, as if
   * it had made it itself. Its outcome (a dead letter), or null when attempt 2 is planned.
   */
  handedOver(first: FirstAttempt): DeliveryResult | null {
    this.attempts = 1;
    this.firstAttemptAt = first.startedAt;
    return this.failed(first.failure, first.startedAt, first.endedAt);
  }

  /** A failed attempt: the outcome it ends the delivery with, or null when a retry is planned (shown as waiting). */
  failed(failure: AttemptFailureDetails, startedAt: number, endedAt = this.now()): DeliveryResult | null {
    const at = this.recordAttempt(startedAt, failure, false, endedAt);
    this.lastError = attemptError(failure, this.attempts, at);
    // paused time does not age the delivery
    const agedFrom = this.firstAttemptAt! + this.pausedMs;
    const state = { attempts: this.attempts, previousDelay: this.previousDelay, agedFrom, at };
    const next = afterFailure(this.delivery, failure, state, this.random);
    if (next.end) return this.finish(next.end, next.reason);
    this.previousDelay = next.delay;
    this.nextAttemptAt = at + next.delay;
    this.hinted = next.hinted;
    const words = this.waitingWords(next.delay, failure.code, next.hinted);
    const becameWaiting = this.shown.enter('waiting', words);
    this.effects.upsert([
      ...(becameWaiting ? [{ key: DeliveryState, value: 'waiting' }] : []),
      { key: Attempts, value: this.attempts },
      ...this.classChange(),
    ]);
    this.searchedClass = this.lastError.class;
    return null;
  }

  // the retries on the server (retryOnServer, docs/retries.md)

  /** A retry-now is acted on: the next attempt is planned for now, past the endpoint's retry budget (the answer). */
  takeRetryRequest(): boolean {
    if (!this.retryAsked) return false;
    this.retryAsked = false;
    this.nextAttemptAt = this.now();
    return true;
  }

  /** The retrying activity's input, from the delivery as it stands; shown as waiting for its next attempt. */
  retryInput(skipBudget: boolean): RetryInput {
    const now = this.now();
    const progress: RetryProgress = {
      attempts: this.attempts,
      previousDelay: this.previousDelay,
      lastError: this.lastError!,
      lastAttemptAt: this.lastAttemptAt!,
      attemptLog: [...this.attemptLog],
      nextAttemptAt: this.nextAttemptAt ?? now,
      hinted: this.hinted,
      reservedAt: null,
      heldBack: 0,
    };
    const delayMs = Math.max(0, progress.nextAttemptAt - now);
    const waiting = this.waitingWords(delayMs, this.lastError!.code, this.hinted);
    this.setState('waiting', `${waiting}; later attempts are retried by Temporal (Pending Activities shows the next)`);
    const agedFrom = this.firstAttemptAt! + this.pausedMs;
    return { delivery: this.delivery, progress, agedFrom, searchedClass: this.searchedClass!, skipBudget };
  }

  /** Progress read when the retrying activity was stopped: taken unless it is behind what the delivery knows. */
  adoptStopped(progress: RetryProgress | null): void {
    if (progress && progress.attempts >= this.attempts) this.adopt(progress);
  }

  /** The retrying activity ended: its progress becomes the delivery's. */
  retryEnded(end: RetryEnd): void {
    this.adopt(end.progress);
    this.hinted = end.progress.hinted;
  }

  /** The delivery's outcome from the retrying activity's end (all but class-changed). */
  finishRetries(end: Exclude<RetryEnd, { end: 'class-changed' }>): DeliveryResult {
    if (end.end === 'delivered') return this.finish('delivered', `${end.reason} on attempt ${this.attempts}`);
    return this.finish(end.end, end.reason);
  }

  /** The error class changed while retrying: the UI's list says so, and the retrying goes on. */
  classChanged(): void {
    this.effects.upsert([
      { key: Attempts, value: this.attempts },
      { key: LastErrorClass, value: this.lastError!.class },
    ]);
    this.searchedClass = this.lastError!.class;
  }

  // the end

  cancelled(): void {
    this.shown.enter('cancelled', 'cancelled');
    this.nextAttemptAt = null;
    this.effects.upsert([
      { key: DeliveryState, value: 'cancelled' },
      { key: Attempts, value: this.attempts },
    ]);
  }

  private finish(outcome: Outcome, reason: string): DeliveryResult {
    this.shown.enter(outcome, `${outcome}: ${reason}`);
    this.nextAttemptAt = null;
    this.effects.upsert([{ key: DeliveryState, value: outcome }, { key: Attempts, value: this.attempts }, ...this.classChange()]);
    const { delivery: d } = this;
    return {
      deliveryId: d.deliveryId,
      messageId: d.messageId,
      outcome,
      attempts: this.attempts,
      firstAttemptAt: iso(this.firstAttemptAt),
      lastAttemptAt: iso(this.lastAttemptAt),
      lastError: this.lastError,
      reason,
      attemptLog: [...this.attemptLog],
      policy: describePolicy(d.policy),
      ...(outcome !== 'delivered' && { message: d }),
    };
  }

  /** LastErrorClass, when the last error's class is not what the UI's list says. */
  private classChange() {
    const cls = this.lastError?.class;
    return cls !== undefined && cls !== this.searchedClass ? [{ key: LastErrorClass, value: cls }] : [];
  }

  /** Every state but `attempting` (too short-lived to be worth an event) is in the UI's list, updated when it changes. */
  private setState(next: DeliveryStateName, words: string): void {
    if (this.shown.enter(next, words) && next !== 'attempting') this.effects.upsert([{ key: DeliveryState, value: next }]);
  }

  /** Records an attempt in the log; when it ended. */
  private recordAttempt(startedAt: number, result: AttemptSuccess | AttemptFailureDetails, ok: boolean, endedAt = this.now()): number {
    this.lastAttemptAt = endedAt;
    const { durationMs, code } = result;
    this.attemptLog = logAttempt(this.attemptLog, { attempt: this.attempts, startedAt, durationMs, code, ok, ...verdictOf(result) });
    return this.lastAttemptAt;
  }

  private adopt(p: RetryProgress): void {
    this.attempts = p.attempts;
    this.previousDelay = p.previousDelay;
    this.lastError = p.lastError;
    this.lastAttemptAt = p.lastAttemptAt;
    this.attemptLog = [...p.attemptLog];
    this.nextAttemptAt = p.nextAttemptAt;
  }

  /** "waiting 37 s after HTTP 503 — attempt 4 next, expires in 6 d 23 h" */
  private waitingWords(delayMs: number, code: string, hinted: boolean): string {
    return waitingSummary({ delayMs, code, nextAttempt: this.attempts + 1, expiresInMs: this.expiresInMs(), hinted });
  }

  private expiresInMs(): number | null {
    if (this.firstAttemptAt === null) return null;
    const at = expiresAt(this.delivery, this.firstAttemptAt + this.pausedMs);
    return at === null ? null : at - this.now();
  }
}
