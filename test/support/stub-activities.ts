/**
 * Scripted stand-ins for the activities the workflows call, under the same names and signatures as
 * src/activities exports (checked by the compiler), for the workflow tier: no endpoint, no broker, no
 * I/O but the stubs' calls to Temporal. What an endpoint answers is a TransportOutcome, classified by the
 * real classifier and raised as the real activities raise it, so the workflow sees what it sees in production.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import {
  type Activities,
  attemptFailure,
  type AttemptSuccess,
  commandReceivedSignal,
  type HandOff,
  type HoldEnd,
  type HoldFailureDetails,
  type RetryEnd,
  type RetryInput,
  type RetryProgress,
  subscribedSignal,
  WAITING_TYPE,
} from '../../src/contract';
import { classify, FAILURE_TYPES } from '../../src/classify/classify';
import type { Classification, ErrorClass, TransportOutcome } from '../../src/classify/types';
import { ATTEMPT_LOG_SIZE } from '../../src/delivery/after-failure';
import type { Delivery } from '../../src/delivery/types';
import type { CommandSubscription, ReceivedCommand } from '../../src/subscription/types';
import { responseDelivery } from '../../src/validation/subscription';

export const ACCEPTED: TransportOutcome = { kind: 'http', status: 202 };
export const UNAVAILABLE: TransportOutcome = { kind: 'http', status: 503 };
export const BAD_REQUEST: TransportOutcome = { kind: 'http', status: 400 };
export const TOO_MANY: TransportOutcome = { kind: 'http', status: 429 };
export const REFUSED: TransportOutcome = { kind: 'network', code: 'ECONNREFUSED' };

/** How one run of the retrying activity (`retryDelivery`) goes. */
export type RetryStep =
  /**
   * `wait` more failed attempts (answered `answer`, default 503), then it waits on the server, as the real one
   * does between attempts, until stopped.
   */
  | { wait: number; answer?: TransportOutcome }
  /** It ends after `attempts` more attempts, the last answered `answer`. */
  | { end: RetryEnd['end']; attempts: number; answer: TransportOutcome };

export interface DeliveryScript {
  /** What the endpoint answers each call of `sendAttempt`, in order; 202 once they run out. */
  send?: TransportOutcome[];
  /** Each run of `retryDelivery`, in order; a run beyond them waits. */
  retries?: RetryStep[];
}

/** What the workflow asked of the stubs for one delivery. */
export interface DeliveryCalls {
  /** The attempt number of each `sendAttempt` (the `delivery-attempt` header the endpoint would see). */
  sent: number[];
  retries: RetryInput[];
}

const ATTEMPT_MS = 12;
/** Far beyond any test: a waiting retrying activity is only ever stopped. */
const WAIT_ON_SERVER_MS = 3_600_000;

/**
 * The delivery activities, scripted per message id; a delivery without a script of its own follows `fallback`
 * (by default: delivered at once).
 */
export class ScriptedDeliveries {
  private readonly scripts = new Map<string, { script: DeliveryScript; calls: DeliveryCalls; sends: number; runs: number }>();
  /** What each delivery's retrying activity saved last (its heartbeat), by delivery id. */
  private readonly saved = new Map<string, RetryProgress>();

  constructor(private readonly fallback?: DeliveryScript) {}

  /** Scripts the delivery of `messageId`; returns what the workflow will have asked of it. */
  script(messageId: string, script: DeliveryScript): DeliveryCalls {
    const calls: DeliveryCalls = { sent: [], retries: [] };
    this.scripts.set(messageId, { script, calls, sends: 0, runs: 0 });
    return calls;
  }

  private entryOf(messageId: string) {
    if (this.fallback && !this.scripts.has(messageId)) this.script(messageId, this.fallback);
    return this.scripts.get(messageId);
  }

  activities(): Pick<Activities, 'sendAttempt' | 'retryDelivery' | 'retryProgress'> {
    return {
      sendAttempt: async (delivery: Delivery, attempt: number): Promise<AttemptSuccess> => {
        const entry = this.entryOf(delivery.messageId);
        entry?.calls.sent.push(attempt);
        const answer = entry?.script.send?.[entry.sends++] ?? ACCEPTED;
        const c = classify(answer, delivery.overrides);
        if (c.class === 'success') return { code: c.code, reason: c.reason, durationMs: ATTEMPT_MS };
        throw attemptFailure({ ...c, durationMs: ATTEMPT_MS });
      },
      retryDelivery: async (input: RetryInput): Promise<RetryEnd> => {
        const entry = this.entryOf(input.delivery.messageId);
        entry?.calls.retries.push(input);
        const step = entry?.script.retries?.[entry.runs++] ?? { wait: 0 };
        if ('wait' in step) {
          const progress = advance(input.progress, step.wait, classify(step.answer ?? UNAVAILABLE), Date.now() + WAIT_ON_SERVER_MS);
          this.saved.set(input.delivery.deliveryId, progress);
          throw ApplicationFailure.create({
            type: WAITING_TYPE,
            message: `waiting for attempt ${progress.attempts + 1}`,
            nextRetryDelay: WAIT_ON_SERVER_MS,
            details: [null, progress],
          });
        }
        const last = classify(step.answer);
        const progress = advance(input.progress, step.attempts, last, Date.now());
        if (step.end === 'delivered') return { end: 'delivered', progress, code: last.code, reason: last.reason };
        if (step.end === 'class-changed') return { end: 'class-changed', progress };
        return { end: step.end, progress, reason: `${step.end} after ${progress.attempts} attempts; last error: ${last.reason}` };
      },
      // the real one reads the retrying activity's last heartbeat from Temporal
      retryProgress: async (workflowId: string) => this.saved.get(workflowId) ?? null,
    };
  }
}

/** The retrying activity's progress after `n` more attempts, the last one classified `last`. */
function advance(from: RetryProgress, n: number, last: Classification, nextAttemptAt: number): RetryProgress {
  const now = Date.now();
  const attempts = from.attempts + n;
  const log = Array.from({ length: n }, (_, i) => ({
    attempt: from.attempts + i + 1,
    startedAt: new Date(now - (n - i) * ATTEMPT_MS).toISOString(),
    durationMs: ATTEMPT_MS,
    code: i === n - 1 ? last.code : 'http-503',
    ok: i === n - 1 && last.class === 'success',
  }));
  const failed = n > 0 && last.class !== 'success';
  return {
    ...from,
    attempts,
    lastAttemptAt: n > 0 ? now : from.lastAttemptAt,
    attemptLog: [...from.attemptLog, ...log].slice(-ATTEMPT_LOG_SIZE),
    lastError: failed
      ? { class: last.class as ErrorClass, code: last.code, reason: last.reason, attempt: attempts, at: new Date(now).toISOString() }
      : from.lastError,
    nextAttemptAt,
  };
}

/** How one run of `holdSubscription` goes. */
export type HoldStep =
  /** Subscribes, and holds until stopped, taken over by the next hold, or ended by `drop`. */
  | { subscribe: true }
  /** Connecting or subscribing fails so. */
  | { fail: TransportOutcome };

export interface SubscriptionScript {
  /** Each hold, in order; a hold beyond them subscribes. */
  holds?: HoldStep[];
  /** What the callback answers each hand-off, in order; 200 once they run out. */
  callback?: TransportOutcome[];
}

export interface SubscriptionCalls {
  /** The hold number of each `holdSubscription`. */
  holds: number[];
  /** Each hand-off: the command's number and the attempt. */
  handed: { seq: number; attempt: number }[];
  released: number;
}

interface OpenHold {
  hold: number;
  end(result: { ok: HoldEnd } | { err: unknown }): void;
}

/**
 * The subscription activities, scripted per subscription id. A hold ends as the broker would end it: a
 * later connection with the same client id (the next hold, or the release) takes the session over.
 */
export class ScriptedSubscriptions {
  private readonly scripts = new Map<string, { script: SubscriptionScript; calls: SubscriptionCalls; holds: number; answers: number }>();
  private readonly open = new Map<string, OpenHold>();

  /** `client`: the test's, for the commands the broker sends (`send`). */
  constructor(private readonly client: () => Client) {}

  script(subscriptionId: string, script: SubscriptionScript): SubscriptionCalls {
    const calls: SubscriptionCalls = { holds: [], handed: [], released: 0 };
    this.scripts.set(subscriptionId, { script, calls, holds: 0, answers: 0 });
    return calls;
  }

  /** The broker sends a command to the subscription's current hold (which tells the workflow, as the real one does). */
  async send(subscriptionId: string, command: { requestId: string | null; name: string; payload?: string }): Promise<void> {
    const hold = this.open.get(subscriptionId);
    if (!hold) throw new Error(`${subscriptionId} holds no subscription now`);
    const topic = `command/${subscriptionId.split('/').slice(1).join('/')}/req/${command.requestId ?? ''}/${command.name}`;
    const received: Omit<ReceivedCommand, 'seq'> = {
      topic,
      requestId: command.requestId,
      name: command.name,
      payload: command.payload ?? '{}',
      encoding: 'utf8',
      contentType: 'application/json',
      receivedAt: Date.now(),
    };
    await this.client().workflow.getHandle(subscriptionId).signal(commandReceivedSignal, { hold: hold.hold, command: received });
  }

  /** The connection of the current hold drops. */
  drop(subscriptionId: string): void {
    const closed = classify({ kind: 'mqtt-closed', message: 'the connection to the broker closed' });
    this.open.get(subscriptionId)?.end({ err: holdFailure(closed, null) });
  }

  /** Ends every hold still open (at the end of a test file, before the worker shuts down). */
  closeAll(): void {
    for (const id of [...this.open.keys()]) this.drop(id);
  }

  activities(): Pick<Activities, 'holdSubscription' | 'handCommand' | 'releaseSubscription'> {
    return {
      holdSubscription: async (sub, options) => {
        const ctx = Context.current();
        const entry = this.scripts.get(sub.subscriptionId);
        entry?.calls.holds.push(options.hold);
        // the same client id takes the session over: the previous hold's connection is closed by the broker
        this.drop(sub.subscriptionId);
        const step = entry?.script.holds?.[entry.holds++] ?? { subscribe: true };
        if ('fail' in step) throw holdFailure(classify(step.fail), null);
        return this.hold(ctx, sub, options.hold);
      },
      handCommand: async (sub: CommandSubscription, command: ReceivedCommand, attempt: number): Promise<HandOff> => {
        const entry = this.scripts.get(sub.subscriptionId);
        entry?.calls.handed.push({ seq: command.seq, attempt });
        const answer = entry?.script.callback?.[entry.answers++] ?? { kind: 'http', status: 200 };
        const c = classify(answer);
        if (c.class !== 'success') throw attemptFailure({ ...c, durationMs: ATTEMPT_MS });
        const answered = { requestId: command.requestId!, status: 200, payload: '{"ok":true}', contentType: 'application/json' };
        const response = command.requestId === null ? null : responseDelivery(sub, answered);
        return { code: c.code, reason: c.reason, durationMs: ATTEMPT_MS, httpStatus: 200, response };
      },
      releaseSubscription: async (sub: CommandSubscription) => {
        const entry = this.scripts.get(sub.subscriptionId);
        if (entry) entry.calls.released++;
        // a clean start with the same client id: the broker drops the session and the connection holding it
        this.drop(sub.subscriptionId);
      },
    };
  }

  private hold(ctx: Context, sub: CommandSubscription, hold: number): Promise<HoldEnd> {
    return new Promise<HoldEnd>((resolve, reject) => {
      const subscribedAt = Date.now();
      const beat = setInterval(() => ctx.heartbeat({ at: Date.now(), subscribedAt }), 1_000);
      const end: OpenHold['end'] = (result) => {
        clearInterval(beat);
        if (this.open.get(sub.subscriptionId) === open) this.open.delete(sub.subscriptionId);
        if ('ok' in result) resolve(result.ok);
        else reject(result.err);
      };
      const open: OpenHold = { hold, end };
      this.open.set(sub.subscriptionId, open);
      ctx.cancelled.catch((reason: unknown) => end({ err: reason }));
      ctx.heartbeat({ at: subscribedAt, subscribedAt });
      ctx.client.workflow
        .getHandle(sub.subscriptionId)
        .signal(subscribedSignal, { hold, at: subscribedAt })
        .catch((err: unknown) => end({ err }));
    });
  }
}

/** A failed hold, as the real activity raises it: the class's failure type, with when the subscription was lost. */
function holdFailure(c: Classification, subscribedAt: number | null): ApplicationFailure {
  const details: HoldFailureDetails = { ...c, durationMs: ATTEMPT_MS, lostAt: Date.now(), subscribedAt };
  const type = FAILURE_TYPES[c.class as ErrorClass];
  return ApplicationFailure.create({ type, message: c.reason, nonRetryable: !c.retryable, details: [details] });
}
