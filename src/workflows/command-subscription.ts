import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ParentClosePolicy,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, AttemptFailureDetails, HoldFailureDetails, HoldHeartbeat } from '../activities';
import type { ErrorClass } from '../classify/types';
import { codeInWords, deliveryDetails, deliverySummary, humanDuration } from '../delivery/summary';
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
import { deliveryWorkflow } from './delivery';
import {
  Attempts,
  DeliveryKind,
  DeliveryState,
  Device,
  Endpoint,
  Tenant,
  commandReceivedSignal,
  stopSubscriptionUpdate,
  subscribedSignal,
  subscriptionStatusQuery,
} from './definitions';
import { ATTEMPT_MARGIN_MS, CLASS_OF_TYPE, failureOf } from './failures';

/** What a run hands to the next when it continues as new; absent on the first run. */
export interface CarriedSubscription {
  run: number;
  holds: number;
  attempts: number;
  previousDelay: number | null;
  lastError: AttemptError | null;
  ledger: DowntimeLedger;
  counts: Omit<CommandCounts, 'queued'>;
  recent: CommandRecord[];
  /** Request ids already received: a command the broker sends again is handed over once. */
  seen: string[];
  /** Commands received and not handed over yet. */
  queue: ReceivedCommand[];
  seq: number;
}

export interface SubscriptionWorkflowInput {
  subscription: CommandSubscription;
  carried?: CarriedSubscription;
  /** Continue as new once the history has this many events (default 4,000). */
  historyLimit?: number;
  /** How long one run of the holding activity lasts before it ends by itself and a new one starts (default 1 day). */
  holdForMs?: number;
}

const DEFAULT_HISTORY_LIMIT = 4_000;
const DEFAULT_HOLD_MS = 24 * 3_600_000;
/** A worker that stops heartbeating for this long has lost the subscription: the workflow resubscribes elsewhere. */
const HEARTBEAT_TIMEOUT_MS = 20_000;
/** Margin over the activity's own bound before Temporal gives up on it (a worker lost mid-call). */
const MARGIN_MS = ATTEMPT_MARGIN_MS;
const RECENT_COMMANDS = 20;
const SEEN_REQUEST_IDS = 1_000;

/**
 * One device's command subscription (the Bosch IoT Hub retry guide, "Retry subscribing for commands"):
 * an activity holds an MQTT subscription to the device's command topic; when subscribing fails or the
 * connection drops, the workflow resubscribes after the subscription's backoff (a durable timer, reset
 * once a subscription works again). Each received command is handed to the HTTP callback (retried with
 * the same backoff for up to `commandMaxAge`), and a two-way command's answer goes out as a
 * `command-response` delivery. Time without a working subscription is recorded, and a spell longer than
 * the threshold (1 min) counts as downtime. Runs until stopped (`stop` update), or a `client` error.
 */
export async function commandSubscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionResult> {
  const sub = input.subscription;
  const carried = input.carried;
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  const holdForMs = input.holdForMs ?? DEFAULT_HOLD_MS;
  const { workflowId } = workflowInfo();

  let state: SubscriptionState = 'connecting';
  let summary = 'starting';
  let holds = carried?.holds ?? 0;
  let attempts = carried?.attempts ?? 0;
  let previousDelay = carried?.previousDelay ?? null;
  let lastError = carried?.lastError ?? null;
  let ledger = carried?.ledger ?? openLedger(sub.downtimeThresholdMs, Date.now());
  let subscribedSince: number | null = null;
  let nextAttemptAt: number | null = null;
  const counts = { ...(carried?.counts ?? { received: 0, handed: 0, responded: 0, failed: 0 }) };
  const recent: CommandRecord[] = [...(carried?.recent ?? [])];
  const seen: string[] = [...(carried?.seen ?? [])];
  const queue: ReceivedCommand[] = [...(carried?.queue ?? [])];
  let seq = carried?.seq ?? 0;
  let stop: string | null = null;
  /** Continue as new: set when the history has grown long; the current hold is ended for it. */
  let rotate = false;
  /** No more commands will come: the command loop drains the queue and ends. */
  let finishing = false;

  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  const status = (): SubscriptionStatus => ({
    subscriptionId: sub.subscriptionId,
    tenant: sub.tenant,
    device: sub.device,
    endpoint: sub.endpoint,
    topic: sub.broker.topic,
    state,
    summary,
    subscribedSince: iso(subscribedSince),
    attempts,
    holds,
    nextAttemptAt: iso(nextAttemptAt),
    lastError,
    commands: { ...counts, queued: queue.length },
    recentCommands: recent.map((r) => ({ ...r })),
    downtime: downtimeReport(ledger, Date.now()),
  });
  const describe = (next: SubscriptionState, words: string) => {
    state = next;
    summary = words;
    setCurrentDetails(words);
  };
  const historyTooLong = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= historyLimit;
  };
  const recordUp = (at: number) => {
    const before = ledger.periods.length + ledger.totalMs;
    const spell = ledger.downSince === null ? 0 : at - ledger.downSince;
    const reason = ledger.downReason;
    ledger = markUp(ledger, at);
    if (ledger.periods.length + ledger.totalMs !== before) log.warn(`downtime: ${humanDuration(spell)} without a working command subscription (${reason})`);
  };
  const update = (n: number, patch: Partial<CommandRecord>) => {
    const record = recent.find((r) => r.seq === n);
    if (record) Object.assign(record, patch);
  };

  setHandler(subscriptionStatusQuery, status);
  setHandler(subscribedSignal, ({ hold, at }) => {
    // a late word from an earlier hold, or one that is being ended, says nothing about now
    if (hold !== holds || stop !== null || rotate || state !== 'connecting') return;
    subscribedSince = at;
    recordUp(at);
    attempts = 0;
    previousDelay = null;
    describe('subscribed', `subscribed to ${sub.broker.topic} on ${sub.endpoint} since ${iso(at)}`);
  });
  setHandler(commandReceivedSignal, ({ command }) => {
    if (command.requestId !== null) {
      // the broker resends a command whose PUBACK it did not get: hand it over once
      if (seen.includes(command.requestId)) return;
      seen.push(command.requestId);
      if (seen.length > SEEN_REQUEST_IDS) seen.shift();
    }
    const received: ReceivedCommand = { ...command, seq: ++seq };
    queue.push(received);
    counts.received++;
    recent.push({ seq, requestId: command.requestId, name: command.name, receivedAt: new Date(command.receivedAt).toISOString(), outcome: 'queued', code: null, status: null, responseId: null });
    if (recent.length > RECENT_COMMANDS) recent.shift();
  });
  setHandler(
    stopSubscriptionUpdate,
    (reason: string) => {
      stop = reason || 'stopped by request';
      return status();
    },
    {
      validator: (_reason: string) => {
        if (stop !== null) throw ApplicationFailure.create({ type: 'AlreadyStopping', message: 'the subscription is already stopping' });
      },
    },
  );

  /** A two-way command's response, as a delivery of its own (listed and read like any other). */
  const startResponse = async (delivery: Delivery, command: ReceivedCommand) => {
    try {
      await startChild(deliveryWorkflow, {
        workflowId: delivery.deliveryId,
        args: [{ delivery }],
        // the response outlives this run (continue-as-new) and the subscription itself
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // what Redeliver.submit gives a delivery, so it is found and read like one
        typedSearchAttributes: [
          { key: DeliveryKind, value: delivery.kind },
          { key: DeliveryState, value: 'pending' },
          { key: Endpoint, value: delivery.endpoint },
          { key: Tenant, value: delivery.tenant },
          { key: Device, value: delivery.device },
          { key: Attempts, value: 0 },
        ],
        memo: {
          delivery: { messageId: delivery.messageId, kind: delivery.kind, qos: delivery.qos, tenant: delivery.tenant, device: delivery.device, endpoint: delivery.endpoint },
          responseTo: { subscriptionId: sub.subscriptionId, command: command.name, requestId: command.requestId },
        },
        staticSummary: `${deliverySummary(delivery)} (response to command ${command.name})`,
        staticDetails: deliveryDetails(delivery),
      });
    } catch (err) {
      // the same command answered before (it came twice): its response is on its way already
      if (err instanceof WorkflowExecutionAlreadyStartedError) return;
      throw err;
    }
  };

  /** Hands one command to the callback, retrying with the backoff for up to commandMaxAge. */
  const handOver = async (command: ReceivedCommand) => {
    let tries = 0;
    let previous: number | null = null;
    update(command.seq, { outcome: 'handing' });
    for (;;) {
      tries++;
      const { handCommand } = proxyActivities<Activities>({
        startToCloseTimeout: sub.callback.timeout + MARGIN_MS,
        retry: { maximumAttempts: 1 },
        summary: `command ${command.seq} (${command.name}) to the callback: attempt ${tries}`,
      });
      let failure: AttemptFailureDetails;
      try {
        const handed = await handCommand(sub, command, tries);
        counts.handed++;
        if (!handed.response) {
          update(command.seq, { outcome: 'handed', code: handed.code });
          return;
        }
        try {
          await startResponse(handed.response, command);
        } catch (err) {
          if (isCancellation(err)) throw err;
          counts.failed++;
          update(command.seq, { outcome: 'rejected', code: 'response-not-started' });
          log.error(`the response to command ${command.seq} could not be started: ${String(err)}`);
          return;
        }
        counts.responded++;
        update(command.seq, { outcome: 'responded', code: handed.code, status: handed.response.command?.status ?? null, responseId: handed.response.deliveryId });
        return;
      } catch (err) {
        if (isCancellation(err)) throw err;
        failure = failureOf(err, sub.callback.timeout);
      }
      update(command.seq, { code: failure.code });
      if (failure.class === 'client') {
        counts.failed++;
        update(command.seq, { outcome: 'rejected' });
        return;
      }
      const now = Date.now();
      const decision = nextDelay(sub.commandPolicy, { attempts: tries, previousDelay: previous, firstAttemptAt: Math.min(command.receivedAt, now), now }, Math.random, failure.retryAfterMs);
      if (!decision.retry) {
        counts.failed++;
        update(command.seq, { outcome: decision.outcome });
        return;
      }
      previous = decision.delay;
      await sleep(decision.delay);
    }
  };

  /** Hands the commands over one by one, in the order received. */
  const commandLoop = async () => {
    for (;;) {
      await condition(() => queue.length > 0 || finishing || rotate);
      if (rotate || queue.length === 0) return;
      await handOver(queue[0]!);
      queue.shift();
      if (historyTooLong() && stop === null) rotate = true;
    }
  };
  const commands = commandLoop();
  // awaited at the end; until then its failure must not count as unhandled
  commands.catch(() => undefined);

  let outcome: SubscriptionOutcome | null = null;
  let reason = '';
  while (stop === null && !rotate) {
    const hold = ++holds;
    describe('connecting', `subscribing to ${sub.broker.topic} on ${sub.endpoint} (attempt ${attempts + 1})`);
    const { holdSubscription } = proxyActivities<Activities>({
      startToCloseTimeout: holdForMs + MARGIN_MS,
      heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
      retry: { maximumAttempts: 1 },
      // a stop or a continue-as-new goes on at once: the next connection with the same client id takes
      // the session over from this one, wherever its worker is
      cancellationType: ActivityCancellationType.TRY_CANCEL,
      summary: `subscription ${hold}: ${sub.broker.topic} on ${sub.endpoint}`,
    });
    const scope = new CancellationScope();
    const holding = scope.run(() => holdSubscription(sub, { workflowId, hold, holdForMs }));
    let over = false;
    condition(() => over || stop !== null || rotate).then(
      () => over || scope.cancel(),
      () => undefined,
    );
    let failure: HoldFailureDetails | undefined;
    let renewed = false;
    try {
      await holding;
      renewed = true;
    } catch (err) {
      if (!(isCancellation(err) && (stop !== null || rotate))) {
        if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
        failure = holdFailureOf(err, Date.now());
      }
    } finally {
      over = true;
    }
    const now = Date.now();
    const lostAt = failure ? Math.min(Math.max(failure.lostAt, subscribedSince ?? ledger.since), now) : now;
    if (failure) ledger = markDown(ledger, lostAt, failure.reason);
    // a renewal (or a continue-as-new) is no outage, but the gap counts should the next hold not subscribe
    else if (stop === null) ledger = markDown(ledger, now, 'renewing the subscription', false);
    subscribedSince = null;
    if (historyTooLong() && stop === null) rotate = true;
    if (renewed || !failure) continue;

    lastError = { class: failure.class as ErrorClass, code: failure.code, reason: failure.reason, attempt: hold, at: new Date(now).toISOString() };
    if (failure.class === 'client') {
      outcome = 'rejected';
      reason = failure.reason;
      break;
    }
    attempts++;
    const decision = nextDelay(sub.policy, { attempts, previousDelay, firstAttemptAt: ledger.downSince ?? now, now }, Math.random, failure.retryAfterMs);
    if (!decision.retry) {
      outcome = decision.outcome;
      reason = `${decision.reason}; last error: ${failure.reason}`;
      break;
    }
    previousDelay = decision.delay;
    nextAttemptAt = now + decision.delay;
    const down = ledger.downSince === null ? 0 : now - ledger.downSince;
    const words = `resubscribing in ${humanDuration(decision.delay)} after ${codeInWords(failure.code)} — attempt ${attempts + 1} next; without a subscription for ${humanDuration(down)}${down > sub.downtimeThresholdMs ? ' (downtime)' : ''}`;
    describe('waiting', words);
    await condition(() => stop !== null, decision.delay, { summary: words });
    nextAttemptAt = null;
  }

  if (rotate && stop === null && outcome === null) {
    // a long history: a fresh run goes on with everything this one knows, and the commands not yet handed over
    describe('connecting', 'continuing as new');
    await commands;
    await condition(allHandlersFinished);
    await continueAsNew<typeof commandSubscriptionWorkflow>({
      subscription: sub,
      historyLimit,
      ...(input.holdForMs !== undefined && { holdForMs: input.holdForMs }),
      carried: { run: (carried?.run ?? 1) + 1, holds, attempts, previousDelay, lastError, ledger, counts, recent, seen, queue, seq },
    });
  }

  describe('stopping', outcome ? `${outcome}: ${reason}` : `stopping: ${stop}`);
  if (stop !== null) {
    // unsubscribe for good: the broker drops the session and its queued commands
    const { releaseSubscription } = proxyActivities<Activities>({ startToCloseTimeout: sub.broker.timeout + MARGIN_MS, retry: { maximumAttempts: 3 }, summary: 'end the subscription on the broker' });
    try {
      await releaseSubscription(sub);
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn(`the subscription could not be ended on the broker (its session expires by itself): ${String(err)}`);
    }
  }
  recordUp(Date.now());
  finishing = true;
  await commands;
  const final: SubscriptionOutcome = outcome ?? 'stopped';
  const why = outcome ? reason : (stop ?? 'stopped');
  describe(final, `${final}: ${why}`);
  return { subscriptionId: sub.subscriptionId, outcome: final, reason: why, lastError, commands: { ...counts, queued: queue.length }, downtime: downtimeReport(ledger, Date.now()) };
}

/** A failed hold: when the subscription was lost comes from the activity, or its last heartbeat when its worker was lost. */
function holdFailureOf(err: unknown, now: number): HoldFailureDetails {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type && CLASS_OF_TYPE.has(cause.type)) {
    const details = cause.details?.[0] as Partial<HoldFailureDetails> | undefined;
    if (details?.class) return { ...(details as AttemptFailureDetails), lostAt: details.lostAt ?? now, subscribedAt: details.subscribedAt ?? null };
  }
  if (cause instanceof TimeoutFailure) {
    const beat = cause.lastHeartbeatDetails as HoldHeartbeat | undefined;
    const what = cause.timeoutType === 'HEARTBEAT' ? 'stopped heartbeating (its worker is lost)' : 'did not end in time';
    return { class: 'connection', retryable: true, code: 'timeout', reason: `the activity holding the subscription ${what}`, durationMs: 0, lostAt: beat?.at ?? now, subscribedAt: beat?.subscribedAt ?? null };
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return { class: 'server', retryable: true, code: 'internal-error', reason: `the subscription failed inside the worker: ${message}`, durationMs: 0, lostAt: now, subscribedAt: null };
}
