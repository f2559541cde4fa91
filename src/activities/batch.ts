import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import {
  firstAttemptsSource,
  type BatchResult,
  type BatchWorkflowInput,
  type FirstAttempt,
  type MessageDisposition,
  type MessageResult,
} from '../contract';
import { DeliveryStarter } from '../starter/delivery-starter';
import type { Delivery } from '../delivery/types';
import { mostUrgent } from '../endpoints/priority';
import { savedHeartbeat } from '../temporal/sdk-adapter';
import { nativeJsonActivity } from './native-json';
import { planSends, sendPlanned, type PlannedSend } from './batch-requests';
import { activityClock, lostAttempt, type AttemptResult, type RequestAttempt } from './deliver';
import type { EndpointAdmission } from '../worker-services/admission';
import { SendLanes } from '../worker-services/send-lanes';
import { forEachBoundedByKey } from '../concurrency/pool';
import { SUBMISSION_UNCHECKED, type SubmissionCheck } from '../worker-services/submission-check';
import type { RecoveryPacer } from '../worker-services/pacer';
import { HoldIntake } from '../starter/hold-intake';
import { Outages } from './batch-outages';

/** First attempts in flight at once to one endpoint (host:port), and in all, across the batches a worker runs (SendLanes). */
export const BATCH_ENDPOINT_CONCURRENCY = 32;
export const BATCH_CONCURRENCY = 256;
/** How often a batch's activity heartbeats its progress; its heartbeat timeout (batchWorkflow) is a few times this. */
export const HEARTBEAT_EVERY_MS = 2_000;

export interface BatchDeps {
  attempt: (delivery: Delivery, attempt: number, clock?: () => number) => Promise<AttemptResult>;
  /** Many messages' first attempts in one request, to an endpoint that opted in (target.batch). */
  attemptRequest: RequestAttempt;
  /** The worker's client: it starts the deliveries of the messages not delivered at once. */
  client: Client | null;
  checkSubmission?: SubmissionCheck;
  /** The worker's lanes to endpoints; default lanes of BATCH_ENDPOINT_CONCURRENCY and BATCH_CONCURRENCY for these activities. */
  lanes?: SendLanes;
  /**
   * The worker's per-endpoint limits over every attempt (docs/endpoint-health.md, "Limits: every attempt, per
   * endpoint"): a request waits here for its room.
   */
  admission?: EndpointAdmission | null;
  /**
   * The worker's recovery pacer (docs/endpoint-health.md, "Outages"): a message whose endpoint is failing waits in an
   * outage hold instead of becoming a delivery of its own. None: no holds, every message not delivered is handed over.
   */
  pacer?: RecoveryPacer | null;
  /** Whether outage holds apply to an endpoint (the worker's default and the endpoint's `outage` setting); default: yes. */
  holdsOutages?: (endpoint: string) => Promise<boolean>;
}

/**
 * What a batch's activity heartbeats: the messages done so far, by index, so that a retry of it skips them; a single
 * submit's first attempt (a batch of one, no workflow) also when its attempt went out (`sentAt`, epoch ms), so that
 * a run after a lost worker counts that attempt lost instead of sending it again under the same number.
 */
type BatchProgress = Record<number, MessageResult> & { sentAt?: number };

/**
 * A batch's first attempts (batchWorkflow): every message sent once, concurrently but at most
 * BATCH_ENDPOINT_CONCURRENCY at a time to one endpoint, counting every batch the worker runs (an MQTT
 * broker's over its pooled connection, so QoS 1 PUBLISHes are in flight together). A message that fails
 * becomes its own delivery, started here with that attempt. A worker lost mid-batch: the activity runs again and skips what its last heartbeat had done;
 * the rest are sent again (at-least-once, with the same Message-Id).
 */
export function createBatchActivities(deps: BatchDeps) {
  const lanes = deps.lanes ?? new SendLanes(BATCH_ENDPOINT_CONCURRENCY, BATCH_CONCURRENCY);
  const intakeFor = holdIntakes(deps.client);
  async function firstAttempts(input: BatchWorkflowInput): Promise<BatchResult> {
    const context = Context.current();
    // every attempt in flight listens for the activity's cancellation
    setMaxListeners(BATCH_CONCURRENCY + 16, context.cancellationSignal);
    const done: BatchProgress = { ...(savedHeartbeat<BatchProgress>(context.info) ?? {}) };
    const single = !context.info.inWorkflow && input.deliveries.length === 1;
    const starter = deps.client && new DeliveryStarter(deps.client, context.info.taskQueue, input.historyLimit);
    const handOver = handOverTo(starter, input);
    const outages = deps.pacer ? new Outages(deps.pacer, intakeFor(context.info.taskQueue), input, deps.holdsOutages) : null;
    // a worker with keys refuses a batch submitted without them: every message becomes a dead letter that says so
    const refused = (await deps.checkSubmission?.()) ?? null;
    // unchecked: fail closed and retry the activity. A hand-over would start deliveries by this worker's
    // encrypting client, whose own check would pass, and a batch that came in plain text would go out
    if (refused?.code === SUBMISSION_UNCHECKED) throw new Error(refused.reason);
    // ordered messages (docs/ordering.md) already hold their places on their keys: each goes as its own delivery,
    // attempted in its turn, since an attempt here could overtake an earlier message of its key. Refused ones are
    // attempted (refused) with the rest: each becomes a dead letter in its turn
    const unsent = (disposition: MessageDisposition, code: string) => async (i: number) => {
      const delivery = input.deliveries[i]!;
      const existing = await handOver(delivery, null);
      const at = new Date(activityClock()()).toISOString();
      done[i] = { messageId: delivery.messageId, deliveryId: delivery.deliveryId, disposition, code, at, ...(existing && { existing }) };
    };
    const queue = unsent('queued', 'queued');
    // held or refused at the endpoint (its breaker, a pause, disabled, no room before a deadline): its own delivery, whose first attempt waits or ends (passLimits)
    const held = (code: string) => unsent('handed-over', code);
    const ownDelivery = async (i: number, first: FirstAttempt) => {
      const delivery = input.deliveries[i]!;
      const existing = await handOver(delivery, first);
      const row = {
        messageId: delivery.messageId,
        deliveryId: delivery.deliveryId,
        code: first.failure.code,
        at: new Date(first.endedAt).toISOString(),
      };
      done[i] = { ...row, disposition: 'handed-over', ...(existing && { existing }) };
    };
    const delivered = (i: number, code: string, at: number) => void (done[i] = deliveredRow(input.deliveries[i]!, code, at));
    const record = async (i: number, result: AttemptResult, startedAt: number, at: number) => {
      if (result.ok) return delivered(i, result.code, at);
      const { ok: _ok, ...failure } = result;
      // its endpoint is failing: it waits with the others (handed to the hold once the batch's sends are done)
      if (await outages?.holdsAfter(i, { startedAt, endedAt: at, failure })) return;
      await ownDelivery(i, { startedAt, endedAt: at, failure });
    };
    // a message on its own, or several in one request to an endpoint that takes them so (planSends)
    const send = async (planned: PlannedSend) => {
      const clock = activityClock();
      let startedAt = clock();
      const endpoint = input.deliveries[planned.indexes[0]!]!.endpoint;
      // a failing endpoint's messages wait in its hold unsent (its probes go from there); a healthy one's await nothing
      const failing = () => outages?.failing(endpoint) === true;
      if (!refused && failing() && (await outages!.holdsUnsent(planned.indexes))) return;
      const results = refused
        ? planned.indexes.map((): AttemptResult => ({ ok: false, ...refused }))
        : await lanes.run(endpoint, async () => {
            // again once it has its lane: the worker's batches queue for their lanes, and the endpoint may be failing by now
            if (failing() && (await outages!.holdsUnsent(planned.indexes))) return HELD_UNSENT;
            // one request, one place at the endpoint; the activity heartbeats while it waits
            const release = await deps.admission?.enter(endpoint, entryOf(planned, input.deliveries, context.cancellationSignal));
            if (release && 'held' in release) return release;
            startedAt = clock(); // the attempt starts when it has a lane and its room, not while it waits for them
            // a single submit's attempt is saved as sent as it goes, in the progress every later beat carries too (a
            // heartbeat is not awaited: a worker lost before it reached the server sends the attempt again, uncounted)
            if (single) {
              done.sentAt = startedAt;
              context.heartbeat(done);
            }
            try {
              return await sendPlanned(deps, input.deliveries, planned, clock);
            } finally {
              release?.(clock() - startedAt);
            }
          });
      if (results === HELD_UNSENT) return;
      if ('held' in results) return void (await runBounded(planned.indexes, held(results.held), () => 'held'));
      const at = clock();
      // all delivered, as most are: recorded here, without the pool a hand-over needs (at volume each promise counts)
      if (results.every((r) => r.ok)) return planned.indexes.forEach((i, n) => delivered(i, results[n]!.code, at));
      const each = (i: number, n: number) => record(i, results[n]!, startedAt, at);
      // a failed batched request hands each of its messages over, a few at a time
      await runBounded(planned.indexes, each, () => 'handed over');
    };
    // the progress is kept alive and current every few seconds, not per message (each beat serializes it all)
    const beat = setInterval(() => context.heartbeat(done), HEARTBEAT_EVERY_MS);
    try {
      const ordered = refused ? [] : input.deliveries.flatMap((d, i) => (d.orderingKey !== undefined && !done[i] ? [i] : []));
      await runBounded(ordered, queue, () => 'ordered');
      await startedOnKeys(starter, input, done);
      // a single submit's attempt that went out on a run lost with its worker: counted, and not sent again (it may
      // wait for the end of the sends as a lone failure: there are none)
      const lost = single && done.sentAt !== undefined && !done[0];
      if (lost) {
        const at = activityClock()();
        await record(0, lostAttempt(at - done.sentAt!), done.sentAt!, at);
      }
      // what a retry of the activity finds done is not sent again
      const sends = lost ? [] : planSends(input.deliveries, (i) => !done[i]);
      await runBounded(sends, send, (planned) => input.deliveries[planned.indexes[0]!]!.endpoint);
      // the failures that looked lone: held if their endpoint fails alike by now, else each its own delivery
      await runBounded(
        outages?.settle() ?? [],
        ({ index, first }) => ownDelivery(index, first),
        () => 'handed over',
      );
      await outages?.handIn(done);
    } finally {
      clearInterval(beat);
    }
    return resultOf(input, done);
  }
  // a single submit's first attempt (a standalone activity) is a batch of one
  const registered = nativeJsonActivity(firstAttempts);
  return { firstAttempts: registered, firstAttempt: registered };
}

/** A message delivered at once, as its batch's result lists it. */
function deliveredRow(delivery: Delivery, code: string, at: number): MessageResult {
  return { messageId: delivery.messageId, deliveryId: delivery.deliveryId, code, at: new Date(at).toISOString(), disposition: 'delivered' };
}

/** The open generation of each hold, as this worker found it, per task queue (HoldIntake); none without a client. */
function holdIntakes(client: Client | null): (taskQueue: string) => HoldIntake | null {
  const intakes = new Map<string, HoldIntake>();
  return (taskQueue) => {
    if (!client) return null;
    if (!intakes.has(taskQueue)) intakes.set(taskQueue, new HoldIntake(client, taskQueue));
    return intakes.get(taskQueue)!;
  };
}

/** A send whose endpoint turned failing while it waited for its lane: its messages wait in the hold unsent. */
const HELD_UNSENT = 'held unsent';

/**
 * How a request waits for its room: as the most urgent message it carries, and not past the earliest deadline
 * among them: then each goes on its own delivery, whose first attempt ends it `expired` unsent.
 */
function entryOf(planned: PlannedSend, deliveries: readonly Delivery[], signal: AbortSignal) {
  const carried = planned.indexes.map((i) => deliveries[i]!);
  const kind = mostUrgent(carried.map((d) => d.kind));
  const deadlines = carried.flatMap((d) => (d.policy.deadline === null ? [] : [d.policy.deadline]));
  return { signal, ...(kind && { kind }), ...(deadlines.length > 0 && { notAfter: Math.min(...deadlines) }) };
}

/**
 * Tells the keys' sequencers the ordered deliveries this batch started exist: their places may be admitted. Again
 * for those a run of the activity before a lost worker started (it may have died before saying so).
 */
async function startedOnKeys(starter: DeliveryStarter | null, input: BatchWorkflowInput, done: BatchProgress): Promise<void> {
  const started = input.deliveries.flatMap((delivery, i) =>
    done[i]?.disposition === 'queued' && !done[i].existing
      ? [{ delivery, behind: input.places?.[delivery.deliveryId]?.behind ?? null }]
      : [],
  );
  if (started.length && starter) await starter.ordering.started(started);
}

/**
 * Starts a message's own delivery from its failed first attempt, or an ordered one in the place the client took
 * for it; `true` when it already existed (that one stands).
 */
function handOverTo(starter: DeliveryStarter | null, input: BatchWorkflowInput) {
  const batch = firstAttemptsSource(input);
  return async (delivery: Delivery, firstAttempt: FirstAttempt | null): Promise<true | undefined> => {
    if (!starter) throw new Error('a batch needs the worker’s client to start the deliveries of messages not delivered at once');
    const place = input.places?.[delivery.deliveryId];
    const { created } = await starter.start(delivery, {
      handedOver: { ...(firstAttempt && { firstAttempt }), batch },
      ...(place && { place }),
    });
    return created ? undefined : true;
  };
}

/**
 * Runs `work` on every item, at most BATCH_CONCURRENCY at once and BATCH_ENDPOINT_CONCURRENCY per key: each
 * key's items in order, keys side by side.
 */
function runBounded<T>(items: readonly T[], work: (item: T, index: number) => Promise<void>, keyOf: (item: T) => string) {
  return forEachBoundedByKey(items, keyOf, { limit: BATCH_CONCURRENCY, perKey: BATCH_ENDPOINT_CONCURRENCY }, work);
}

function resultOf(input: BatchWorkflowInput, done: BatchProgress): BatchResult {
  // with what each message was: its status by id reads the result, not the batch's input (message-index.ts)
  const results = input.deliveries.map(({ kind, qos, endpoint }, i) => ({ ...done[i]!, kind, qos, endpoint }));
  const delivered = results.filter((r) => r.disposition === 'delivered').length;
  const held = results.filter((r) => r.disposition === 'held').length;
  return {
    batchId: input.batchId,
    tenant: input.tenant,
    messages: results.length,
    delivered,
    handedOver: results.length - delivered - held,
    ...(held > 0 && { held }),
    results,
  };
}
