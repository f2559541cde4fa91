import type { AttemptFailureDetails, CarriedSubscription, HandOff, HoldFailureDetails } from '../contract';
import { attemptError } from '../delivery/attempt-error';
import { codeInWords, humanDuration } from '../delivery/summary';
import { refusal } from '../errors';
import type { AttemptError, Delivery } from '../delivery/types';
import { nextDelay } from '../policy/backoff';
import { downtimeReport, markDown, markUp, openLedger, type DowntimeLedger } from '../subscription/downtime';
import type {
  CommandCounts,
  CommandRecord,
  CommandSubscription,
  ReceivedCommand,
  SubscriptionOutcome,
  SubscriptionResult,
  SubscriptionState,
  SubscriptionStatus,
} from '../subscription/types';
import { Shown, type WorkflowEffects } from './visibility';

/** What the tracker needs from its workflow; tests give their own. */
export interface SubscriptionEnv {
  effects: WorkflowEffects;
  /** Default Date.now: in a workflow, the time of the current workflow task. */
  now?: () => number;
  /** Default Math.random: in a workflow, a generator seeded per run. */
  random?: () => number;
}

/** One command's tries at the callback so far, and the last wait between them. */
export interface HandOverTries {
  count: number;
  previousDelay: number | null;
}

const RECENT_COMMANDS = 20;
const SEEN_REQUEST_IDS = 1_000;

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/**
 * One command subscription's state and its transitions, without Temporal: the holds of the subscription
 * and the backoff between them, the downtime ledger, the commands received and how each was handed over,
 * and what goes to the next run. The workflow (commandSubscriptionWorkflow) runs the activities and
 * timers these decide; unit-tested in test/unit/.
 */
export class SubscriptionTracker {
  private readonly shown: Shown<SubscriptionState>;
  private readonly effects: WorkflowEffects;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly run: number;
  /** The holding activity's runs so far: the current one's number tells its signals from a late one's. */
  private holds: number;
  /** Failed subscribes since the last one that worked. */
  private attempts: number;
  private previousDelay: number | null;
  private lastError: AttemptError | null;
  private ledger: DowntimeLedger;
  private subscribedSince: number | null = null;
  private nextAttemptAt: number | null = null;
  private readonly counts: Omit<CommandCounts, 'queued'>;
  private readonly recent: CommandRecord[];
  private readonly seen: string[];
  private readonly queue: ReceivedCommand[];
  private seq: number;
  private stop: string | null = null;
  /** Continue as new: set when the history has grown long; the current hold is ended for it. */
  private rotate = false;
  /** No more commands will come: the command loop drains the queue and ends. */
  private finishing = false;
  private outcome: { outcome: SubscriptionOutcome; reason: string } | null = null;

  constructor(
    readonly sub: CommandSubscription,
    carried: CarriedSubscription | undefined,
    env: SubscriptionEnv,
  ) {
    this.effects = env.effects;
    this.now = env.now ?? Date.now;
    this.random = env.random ?? Math.random;
    this.shown = new Shown<SubscriptionState>('connecting', this.effects);
    this.run = carried?.run ?? 1;
    this.holds = carried?.holds ?? 0;
    this.attempts = carried?.attempts ?? 0;
    this.previousDelay = carried?.previousDelay ?? null;
    this.lastError = carried?.lastError ?? null;
    this.ledger = carried?.ledger ?? openLedger(sub.downtimeThresholdMs, this.now());
    this.counts = { ...(carried?.counts ?? { received: 0, handed: 0, responded: 0, failed: 0 }) };
    this.recent = [...(carried?.recent ?? [])];
    this.seen = [...(carried?.seen ?? [])];
    this.queue = [...(carried?.queue ?? [])];
    this.seq = carried?.seq ?? 0;
  }

  /** A stop was asked (the `stop` update). */
  get stopping(): boolean {
    return this.stop !== null;
  }

  /** Whether to hold the subscription (again): not stopping, not rotating. */
  get holding(): boolean {
    return this.stop === null && !this.rotate;
  }

  /** Whether the command loop has something to do: a command to hand over, or its end. */
  get commandsToHandle(): boolean {
    return this.queue.length > 0 || this.finishing || this.rotate;
  }

  /** The run continues as new: its history grew long, and neither a stop nor an outcome ends it. */
  get continuesAsNew(): boolean {
    return this.rotate && this.stop === null && this.outcome === null;
  }

  status(): SubscriptionStatus {
    const { sub } = this;
    return {
      subscriptionId: sub.subscriptionId,
      tenant: sub.tenant,
      device: sub.device,
      endpoint: sub.endpoint,
      topic: sub.broker.topic,
      state: this.shown.state,
      summary: this.shown.summary,
      subscribedSince: iso(this.subscribedSince),
      attempts: this.attempts,
      holds: this.holds,
      nextAttemptAt: iso(this.nextAttemptAt),
      lastError: this.lastError,
      commands: { ...this.counts, queued: this.queue.length },
      recentCommands: this.recent.map((r) => ({ ...r })),
      downtime: downtimeReport(this.ledger, this.now()),
    };
  }

  carried(): CarriedSubscription {
    const { holds, attempts, previousDelay, lastError, ledger, counts, recent, seen, queue, seq } = this;
    return { run: this.run + 1, holds, attempts, previousDelay, lastError, ledger, counts, recent, seen, queue, seq };
  }

  // the handlers

  /** The broker granted the current hold's subscription; a late word from an earlier hold, or one being ended, says nothing about now. */
  subscribed(hold: number, at: number): void {
    if (hold !== this.holds || this.stop !== null || this.rotate || this.shown.state !== 'connecting') return;
    this.subscribedSince = at;
    this.recordUp(at);
    this.attempts = 0;
    this.previousDelay = null;
    this.shown.enter('subscribed', `subscribed to ${this.sub.broker.topic} on ${this.sub.endpoint} since ${iso(at)}`);
  }

  /** A command from the broker, queued for the callback; one the broker sends again (no PUBACK seen) is queued once. */
  received(command: Omit<ReceivedCommand, 'seq'>): void {
    if (command.requestId !== null) {
      if (this.seen.includes(command.requestId)) return;
      this.seen.push(command.requestId);
      if (this.seen.length > SEEN_REQUEST_IDS) this.seen.shift();
    }
    const seq = ++this.seq;
    this.queue.push({ ...command, seq });
    this.counts.received++;
    const { requestId, name } = command;
    const receivedAt = new Date(command.receivedAt).toISOString();
    this.recent.push({ seq, requestId, name, receivedAt, outcome: 'queued', code: null, status: null, responseId: null });
    if (this.recent.length > RECENT_COMMANDS) this.recent.shift();
  }

  checkStop(): void {
    if (this.stop !== null) throw refusal('AlreadyStopping', 'the subscription is already stopping');
  }

  requestStop(reason: string): SubscriptionStatus {
    this.stop = reason || 'stopped by request';
    return this.status();
  }

  // the holds of the subscription

  /** A new hold starts; its number. */
  startHold(): number {
    const hold = ++this.holds;
    this.shown.enter('connecting', `subscribing to ${this.sub.broker.topic} on ${this.sub.endpoint} (attempt ${this.attempts + 1})`);
    return hold;
  }

  /** A hold ended: lost (`failure`), renewed, or ended for a stop or a continue-as-new. */
  holdEnded(failure: HoldFailureDetails | undefined): void {
    const now = this.now();
    if (failure) {
      // the activity says when it lost the subscription; not before it had it, not in the future
      const lostAt = Math.min(Math.max(failure.lostAt, this.subscribedSince ?? this.ledger.since), now);
      this.ledger = markDown(this.ledger, lostAt, failure.reason);
    } else if (this.stop === null) {
      // a renewal (or a continue-as-new) is no outage, but the gap counts should the next hold not subscribe
      this.ledger = markDown(this.ledger, now, 'renewing the subscription', false);
    }
    this.subscribedSince = null;
  }

  /** Continue as new once the history is long, unless stopping: the current hold and command loop end for it. */
  rotateIf(historyTooLong: boolean): void {
    if (historyTooLong && this.stop === null) this.rotate = true;
  }

  /**
   * A hold that failed: the wait before subscribing again (shown as waiting), or null when the failure ends
   * the subscription (a `client` error, or the policy's bounds).
   */
  holdFailed(failure: HoldFailureDetails, hold: number): { delay: number; words: string } | null {
    const now = this.now();
    this.lastError = attemptError(failure, hold, now);
    if (failure.class === 'client') return this.end('rejected', failure.reason);
    this.attempts++;
    const aged = { attempts: this.attempts, previousDelay: this.previousDelay, firstAttemptAt: this.ledger.downSince ?? now, now };
    const decision = nextDelay(this.sub.policy, aged, this.random, failure.retryAfterMs);
    if (!decision.retry) return this.end(decision.outcome, `${decision.reason}; last error: ${failure.reason}`);
    this.previousDelay = decision.delay;
    this.nextAttemptAt = now + decision.delay;
    const down = this.ledger.downSince === null ? 0 : now - this.ledger.downSince;
    const without = `without a subscription for ${humanDuration(down)}${down > this.sub.downtimeThresholdMs ? ' (downtime)' : ''}`;
    const after = `after ${codeInWords(failure.code)} — attempt ${this.attempts + 1} next`;
    const words = `resubscribing in ${humanDuration(decision.delay)} ${after}; ${without}`;
    this.shown.enter('waiting', words);
    return { delay: decision.delay, words };
  }

  waited(): void {
    this.nextAttemptAt = null;
  }

  // the commands

  /** The next command to hand over; null when the command loop ends (no more, or continue-as-new). */
  nextCommand(): ReceivedCommand | null {
    return this.rotate ? null : (this.queue[0] ?? null);
  }

  /** The command handed over (or given up) leaves the queue. */
  commandDone(): void {
    this.queue.shift();
  }

  handing(seq: number): void {
    this.update(seq, { outcome: 'handing' });
  }

  /** The callback took the command: the response it answered with, to start as a delivery (two-way commands), or null. */
  handed(seq: number, handed: HandOff): Delivery | null {
    this.counts.handed++;
    if (handed.response) return handed.response;
    this.update(seq, { outcome: 'handed', code: handed.code });
    return null;
  }

  responded(seq: number, code: string, response: Delivery): void {
    this.counts.responded++;
    this.update(seq, { outcome: 'responded', code, status: response.command?.status ?? null, responseId: response.deliveryId });
  }

  responseNotStarted(seq: number): void {
    this.counts.failed++;
    this.update(seq, { outcome: 'rejected', code: 'response-not-started' });
  }

  /**
   * A failed hand-over: the wait before the next try, or null when the command is given up (a `client`
   * error, or the command policy's bounds: commandMaxAge counts from when the command was received).
   */
  handOverFailed(command: ReceivedCommand, failure: AttemptFailureDetails, tries: HandOverTries): number | null {
    this.update(command.seq, { code: failure.code });
    if (failure.class === 'client') {
      this.counts.failed++;
      this.update(command.seq, { outcome: 'rejected' });
      return null;
    }
    const now = this.now();
    const aged = { attempts: tries.count, previousDelay: tries.previousDelay, firstAttemptAt: Math.min(command.receivedAt, now), now };
    const decision = nextDelay(this.sub.commandPolicy, aged, this.random, failure.retryAfterMs);
    if (decision.retry) return decision.delay;
    this.counts.failed++;
    this.update(command.seq, { outcome: decision.outcome });
    return null;
  }

  // the end

  /** The subscription ends: stopping, or an outcome. */
  ending(): void {
    this.shown.enter('stopping', this.outcome ? `${this.outcome.outcome}: ${this.outcome.reason}` : `stopping: ${this.stop}`);
  }

  /** No command comes any more: the command loop hands over what is queued, and ends. */
  noMoreCommands(): void {
    this.recordUp(this.now());
    this.finishing = true;
  }

  result(): SubscriptionResult {
    const outcome = this.outcome?.outcome ?? 'stopped';
    const reason = this.outcome ? this.outcome.reason : (this.stop ?? 'stopped');
    this.shown.enter(outcome, `${outcome}: ${reason}`);
    const { sub, lastError, counts, queue, ledger } = this;
    const commands = { ...counts, queued: queue.length };
    return { subscriptionId: sub.subscriptionId, outcome, reason, lastError, commands, downtime: downtimeReport(ledger, this.now()) };
  }

  continuing(): void {
    this.shown.enter('connecting', 'continuing as new');
  }

  private end(outcome: SubscriptionOutcome, reason: string): null {
    this.outcome = { outcome, reason };
    return null;
  }

  /** The subscription works (again): a spell without it that passed the threshold is in the worker's log. */
  private recordUp(at: number): void {
    const { ledger } = this;
    const before = ledger.periods.length + ledger.totalMs;
    const spell = ledger.downSince === null ? 0 : at - ledger.downSince;
    this.ledger = markUp(ledger, at);
    if (this.ledger.periods.length + this.ledger.totalMs !== before) {
      this.effects.warn(`downtime: ${humanDuration(spell)} without a working command subscription (${ledger.downReason})`);
    }
  }

  private update(seq: number, patch: Partial<CommandRecord>): void {
    const record = this.recent.find((r) => r.seq === seq);
    if (record) Object.assign(record, patch);
  }
}
