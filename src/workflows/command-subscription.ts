import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityCancellationType,
  ActivityFailure,
  CancellationScope,
  ParentClosePolicy,
  TimeoutFailure,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import {
  type Activities,
  ATTEMPT_MARGIN_MS,
  type AttemptFailureDetails,
  type SubscriptionWorkflowInput,
  commandReceivedSignal,
  deliveryFacts,
  deliveryStartOptions,
  failureOf,
  type HoldFailureDetails,
  type HoldHeartbeat,
  stopSubscriptionUpdate,
  subscribedSignal,
  subscriptionStatusQuery,
  holdFailureDetails,
} from '../contract';
import type { Delivery } from '../delivery/types';
import type { CommandSubscription, ReceivedCommand, SubscriptionResult } from '../subscription/types';
import { deliveryWorkflow } from './delivery';
import { continueAsNewWhenIdle, DEFAULT_HISTORY_LIMIT, historyTooLong } from './history';
import { SubscriptionTracker } from './subscription-state';
import { temporalEffects } from './visibility';

const DEFAULT_HOLD_MS = 24 * 3_600_000;
/** A worker that stops heartbeating for this long has lost the subscription: the workflow resubscribes elsewhere. */
const HEARTBEAT_TIMEOUT_MS = 20_000;
/** Margin over the activity's own bound before Temporal gives up on it (a worker lost mid-call). */
const MARGIN_MS = ATTEMPT_MARGIN_MS;

/**
 * One device's command subscription (the Bosch IoT Hub retry guide, "Retry subscribing for commands"):
 * an activity holds an MQTT subscription to the device's command topic; when subscribing fails or the
 * connection drops, the workflow resubscribes after the subscription's backoff (a durable timer, reset
 * once a subscription works again). Each received command is handed to the HTTP callback (retried with
 * the same backoff for up to `commandMaxAge`), and a two-way command's answer goes out as a
 * `command-response` delivery. Time without a working subscription is recorded, and a spell longer than
 * the threshold (1 min) counts as downtime. Runs until stopped (`stop` update), or a `client` error.
 * Its state and decisions are in SubscriptionTracker; the commands are handed over by a loop of their own.
 */
export async function commandSubscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionResult> {
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  const holdForMs = input.holdForMs ?? DEFAULT_HOLD_MS;
  const { workflowId } = workflowInfo();
  const s = new SubscriptionTracker(input.subscription, input.carried, { effects: temporalEffects });
  const { sub } = s;
  setHandler(subscriptionStatusQuery, () => s.status());
  setHandler(subscribedSignal, ({ hold, at }) => s.subscribed(hold, at));
  setHandler(commandReceivedSignal, ({ command }) => s.received(command));
  setHandler(stopSubscriptionUpdate, (reason: string) => s.requestStop(reason), { validator: (_reason: string) => s.checkStop() });

  const commands = commandLoop(s, historyLimit);
  // awaited at the end; until then its failure must not count as unhandled
  commands.catch(() => undefined);

  // every step of this loop between its two waits is synchronous, as recorded: its commands keep their place
  // among those of the command loop when both wake in the same workflow task
  while (s.holding) {
    const hold = s.startHold();
    const { holdSubscription } = holdActivity(sub, hold, holdForMs);
    const scope = new CancellationScope();
    const holding = scope.run(() => holdSubscription(sub, { workflowId, hold, holdForMs }));
    let over = false;
    condition(() => over || !s.holding).then(
      () => over || scope.cancel(),
      () => undefined,
    );
    let failure: HoldFailureDetails | undefined;
    let renewed = false;
    try {
      await holding;
      renewed = true;
    } catch (err) {
      failure = holdFailure(err, !s.holding);
    } finally {
      over = true;
    }
    s.holdEnded(failure);
    s.rotateIf(historyTooLong(historyLimit));
    if (renewed || !failure) continue;
    const wait = s.holdFailed(failure, hold);
    if (!wait) break;
    await condition(() => s.stopping, wait.delay, { summary: wait.words });
    s.waited();
  }

  if (s.continuesAsNew) {
    // a long history: a fresh run goes on with everything this one knows, and the commands not yet handed over
    s.continuing();
    await commands;
    await continueAsNewWhenIdle<typeof commandSubscriptionWorkflow>({
      subscription: sub,
      historyLimit,
      ...(input.holdForMs !== undefined && { holdForMs: input.holdForMs }),
      carried: s.carried(),
    });
  }
  s.ending();
  if (s.stopping) await release(sub);
  s.noMoreCommands();
  await commands;
  return s.result();
}

function holdActivity(sub: CommandSubscription, hold: number, holdForMs: number) {
  return proxyActivities<Activities>({
    startToCloseTimeout: holdForMs + MARGIN_MS,
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
    retry: { maximumAttempts: 1 },
    // a stop or a continue-as-new goes on at once: the next connection with the same client id takes
    // the session over from this one, wherever its worker is
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    summary: `subscription ${hold}: ${sub.broker.topic} on ${sub.endpoint}`,
  });
}

/** Unsubscribes for good: the broker drops the session and its queued commands. */
async function release(sub: CommandSubscription): Promise<void> {
  const { releaseSubscription } = proxyActivities<Activities>({
    startToCloseTimeout: sub.broker.timeout + MARGIN_MS,
    retry: { maximumAttempts: 3 },
    summary: 'end the subscription on the broker',
  });
  try {
    await releaseSubscription(sub);
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn(`the subscription could not be ended on the broker (its session expires by itself): ${String(err)}`);
  }
}

/** Hands the commands over one by one, in the order received. */
async function commandLoop(s: SubscriptionTracker, historyLimit: number): Promise<void> {
  for (;;) {
    await condition(() => s.commandsToHandle);
    const command = s.nextCommand();
    if (!command) return;
    await handOver(s, command);
    s.commandDone();
    s.rotateIf(historyTooLong(historyLimit));
  }
}

/** Hands one command to the callback, retrying with the backoff for up to commandMaxAge. */
async function handOver(s: SubscriptionTracker, command: ReceivedCommand): Promise<void> {
  const { sub } = s;
  const tries = { count: 0, previousDelay: null as number | null };
  s.handing(command.seq);
  for (;;) {
    tries.count++;
    const { handCommand } = proxyActivities<Activities>({
      startToCloseTimeout: sub.callback.timeout + MARGIN_MS,
      retry: { maximumAttempts: 1 },
      summary: `command ${command.seq} (${command.name}) to the callback: attempt ${tries.count}`,
    });
    let failure: AttemptFailureDetails;
    try {
      const handed = await handCommand(sub, command, tries.count);
      const response = s.handed(command.seq, handed);
      if (!response) return;
      try {
        await startResponse(sub, response, command);
      } catch (err) {
        if (isCancellation(err)) throw err;
        s.responseNotStarted(command.seq);
        log.error(`the response to command ${command.seq} could not be started: ${String(err)}`);
        return;
      }
      s.responded(command.seq, handed.code, response);
      return;
    } catch (err) {
      if (isCancellation(err)) throw err;
      failure = failureOf(err, sub.callback.timeout);
    }
    const delay = s.handOverFailed(command, failure, tries);
    if (delay === null) return;
    tries.previousDelay = delay;
    await sleep(delay);
  }
}

/** A two-way command's response, as a delivery of its own (listed and read like any other). */
async function startResponse(sub: CommandSubscription, delivery: Delivery, command: ReceivedCommand): Promise<void> {
  try {
    await startChild(deliveryWorkflow, {
      ...deliveryStartOptions(delivery, 'REJECT_DUPLICATE', `response to command ${command.name}`),
      args: [{ delivery, limited: true }],
      // the response outlives this run (continue-as-new) and the subscription itself
      parentClosePolicy: ParentClosePolicy.ABANDON,
      memo: {
        delivery: deliveryFacts(delivery),
        responseTo: { subscriptionId: sub.subscriptionId, command: command.name, requestId: command.requestId },
      },
    });
  } catch (err) {
    // the same command answered before (it came twice): its response is on its way already
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

/**
 * A hold's failure; none when it was ended on purpose (a stop, a continue-as-new). The workflow's own
 * cancellation goes on up.
 */
function holdFailure(err: unknown, endedOnPurpose: boolean): HoldFailureDetails | undefined {
  if (isCancellation(err) && endedOnPurpose) return undefined;
  if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
  return holdFailureOf(err, Date.now());
}

/** A failed hold: when the subscription was lost comes from the activity, or its last heartbeat when its worker was lost. */
function holdFailureOf(err: unknown, now: number): HoldFailureDetails {
  const details = holdFailureDetails(err);
  if (details) return { ...details, lostAt: details.lostAt ?? now, subscribedAt: details.subscribedAt ?? null };
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) {
    const beat = cause.lastHeartbeatDetails as HoldHeartbeat | undefined;
    const what = cause.timeoutType === 'HEARTBEAT' ? 'stopped heartbeating (its worker is lost)' : 'did not end in time';
    const reason = `the activity holding the subscription ${what}`;
    const lostAt = beat?.at ?? now;
    return {
      class: 'connection',
      retryable: true,
      code: 'timeout',
      reason,
      durationMs: 0,
      lostAt,
      subscribedAt: beat?.subscribedAt ?? null,
    };
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  const reason = `the subscription failed inside the worker: ${message}`;
  return { class: 'server', retryable: true, code: 'internal-error', reason, durationMs: 0, lostAt: now, subscribedAt: null };
}
