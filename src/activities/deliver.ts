import { CancelledFailure, Context } from '@temporalio/activity';
import type { Dispatcher } from 'undici';
import { classify, type TransportOutcome } from '../classify';
import {
  attemptFailure,
  type AttemptFailureDetails,
  type AttemptSuccess,
  type SendOptions,
  unsentFailure,
  waitingFailure,
} from '../contract';
import { mqttQos } from '../delivery/summary';
import { isMqttTarget, type Delivery, type HttpTarget, type MqttTarget } from '../delivery/types';
import { arrivalProfile } from '../endpoints/recording';
import type { AttemptOutcome } from '../endpoints/types';
import { expiresAt } from '../delivery/summary';
import type { EndpointAdmission } from '../worker-services/admission';
import { sendHttp, type HttpAttempt, type HttpRequest } from '../transports/http';
import { createMqttPool, type MqttPool, type MqttPublish } from '../transports/mqtt';
import { signRequest, signingSecretsFromEnvironment, webhookIdOf, type Signing, type SigningSecretResolver } from '../transports/signing';
import { savedHeartbeat } from '../temporal/sdk-adapter';
import { passLimits } from '../worker-services/limits';
import { heldUntil, limitsVerdict } from '../delivery/limits-verdict';

/** The headers every attempt carries: the stable message id lets a receiver deduplicate retries. */
export function deliveryHeaders(delivery: Delivery, attempt: number): Record<string, string> {
  const headers: Record<string, string> = {
    ...(isMqttTarget(delivery.target) ? {} : delivery.target.headers),
    'content-type': delivery.contentType,
    'message-id': delivery.messageId,
    'delivery-attempt': String(attempt),
  };
  // Hono's HTTP adapter reads the telemetry QoS from this header
  if (delivery.kind === 'telemetry') headers['qos-level'] = String(delivery.qos);
  return headers;
}

/** One HTTP attempt of a delivery: pure, so tests can check that whatever submit accepts can be sent. */
export function httpRequestOf(delivery: Delivery, target: HttpTarget, attempt: number, signal?: AbortSignal): HttpRequest {
  const headers = deliveryHeaders(delivery, attempt);
  return { url: target.url, method: target.method, headers, body: delivery.body, timeoutMs: target.timeout, ...(signal && { signal }) };
}

/**
 * One MQTT attempt of a delivery. The stable message id and the attempt number travel as MQTT 5 user
 * properties (`message-id`, `delivery-attempt`), as the HTTP headers of the same names do.
 */
export function mqttPublishOf(delivery: Delivery, target: MqttTarget, attempt: number, signal?: AbortSignal): MqttPublish {
  return {
    url: target.url,
    protocolVersion: target.protocolVersion,
    credential: target.credential,
    tenant: delivery.tenant,
    tls: target.tls,
    topic: target.topic,
    payload: delivery.body,
    qos: mqttQos(delivery),
    timeoutMs: target.timeout,
    userProperties: { 'message-id': delivery.messageId, 'delivery-attempt': String(attempt) },
    contentType: delivery.contentType,
    ...(signal && { signal }),
  };
}

/** What one attempt came to: success, or a failure with its classification. */
export type AttemptResult = ({ ok: true } & AttemptSuccess) | ({ ok: false } & AttemptFailureDetails);

/** Hears of every attempt sent: endpoint health (EndpointReporter), and tests that follow attempts in server time. */
export interface AttemptListener {
  /**
   * `timeoutMs`: the attempt's timeout as the delivery's producer chose it (`target.timeout`); `tenant`: whose
   * delivery it was (the endpoint reporter bounds the endpoint workflows each tenant opens).
   */
  attempted(
    endpoint: string,
    outcome: AttemptOutcome,
    attempt: { deliveryId: string; attempt: number; startedAt: number; timeoutMs: number; tenant: string },
  ): void;
}

/**
 * The clock of an attempt: the local clock, but never behind Temporal's as the activity knows it: its
 * schedule time, or `floor` (a retry's planned time: the server never starts a retry early), moved on by
 * the time the attempt has run. On a real server the local clock leads; on a time-skipping test server,
 * whose time runs ahead, Temporal's does, so a delivery's max age and planned times mean the same to the
 * activity as to the workflow. Outside an activity (direct calls in tests), the local clock.
 */
export function activityClock(floor = -Infinity): () => number {
  let base: number;
  try {
    base = Math.max(Context.current().info.currentAttemptScheduledTimestampMs, floor);
  } catch {
    return Date.now;
  }
  const began = Date.now();
  return () => Math.max(Date.now(), base + (Date.now() - began));
}

export interface DeliverDeps {
  http: Dispatcher;
  mqtt?: MqttPool;
  /** Signing secrets by name (docs/deliveries.md, "Signed requests"). Default: the worker's environment, read at every request. */
  signing?: SigningSecretResolver;
  now?: () => number;
  listener?: AttemptListener;
}

/** What goes out for an attempt: an HTTP request or an MQTT publish, ended early by the signal. */
type Exchange = (signal: AbortSignal | undefined) => Promise<{ outcome: TransportOutcome; durationMs: number }>;

/**
 * Sends one exchange for one or more deliveries (a batched request carries many: planSends)
 * and classifies what came back for each, by its own overrides. A worker shutting down mid-attempt hands it
 * back (see handedBack); any other cancellation stays a cancellation.
 */
function exchangeAndClassify(deps: DeliverDeps) {
  return async (deliveries: readonly Delivery[], attempt: number, clock: () => number, exchange: Exchange): Promise<AttemptResult[]> => {
    const startedAt = clock();
    const cancelled = cancellationSignal();
    const { outcome, durationMs } = await exchange(cancelled);
    if (cancelled?.aborted) throw handedBack(cancelled.reason, durationMs);
    const at = clock();
    return deliveries.map((delivery): AttemptResult => {
      const c = classify(outcome, delivery.overrides, at);
      deps.listener?.attempted(
        delivery.endpoint,
        {
          at,
          ok: c.class === 'success',
          class: c.class,
          code: c.code,
          // what a replay of the endpoint's outages needs: what arrived, and which attempts were retries
          ...(attempt === 1 ? { arrival: arrivalProfile(delivery.kind, delivery.policy, startedAt) } : { retry: true }),
        },
        { deliveryId: delivery.deliveryId, attempt, startedAt, timeoutMs: delivery.target.timeout, tenant: delivery.tenant },
      );
      if (c.class === 'success') return { ok: true, code: c.code, reason: c.reason, durationMs };
      return { ok: false, ...c, durationMs };
    });
  };
}

/**
 * Sends an HTTP request, signed when its target names a signing secret (`signing`): a secret the worker
 * does not know, or one not bound to the endpoint, sends nothing and is the outcome.
 */
function httpSender(deps: DeliverDeps) {
  const secrets = deps.signing ?? signingSecretsFromEnvironment();
  return (request: HttpRequest, signing: Signing | undefined): Promise<HttpAttempt> => {
    if (!signing) return sendHttp(request, deps.http);
    const signed = signRequest(request, signing, secrets);
    return signed.ok ? sendHttp(signed.request, deps.http) : Promise.resolve({ outcome: signed.outcome, durationMs: 0 });
  };
}

/** Sends one attempt of a delivery, over HTTP or MQTT by its target, and classifies what came back. */
export function createAttempt(deps: DeliverDeps) {
  // made on first use when the worker passed none: a worker that never sees an MQTT target opens nothing
  let pool = deps.mqtt;
  const mqtt = () => (pool ??= createMqttPool());
  const send = exchangeAndClassify(deps);
  const sendHttpSigned = httpSender(deps);
  return async function attempt(
    delivery: Delivery,
    attempt: number,
    clock: () => number = deps.now ?? activityClock(),
  ): Promise<AttemptResult> {
    const target = delivery.target;
    const [result] = await send([delivery], attempt, clock, (signal) =>
      isMqttTarget(target)
        ? mqtt().publish(mqttPublishOf(delivery, target, attempt, signal))
        : sendHttpSigned(
            httpRequestOf(delivery, target, attempt, signal),
            target.signing ? { secret: target.signing, id: webhookIdOf(delivery.deliveryId), tenant: delivery.tenant } : undefined,
          ),
    );
    return result!;
  };
}

/**
 * The first attempt of many deliveries in one HTTP request (planSends builds it): one
 * result per delivery, in their order, each the request's outcome classified by that delivery's overrides.
 */
export function createRequestAttempt(deps: DeliverDeps) {
  const send = exchangeAndClassify(deps);
  const sendHttpSigned = httpSender(deps);
  return (deliveries: readonly Delivery[], request: HttpRequest, clock: () => number = deps.now ?? activityClock(), signing?: Signing) =>
    send(deliveries, 1, clock, (signal) => sendHttpSigned({ ...request, ...(signal && { signal }) }, signing));
}

export type RequestAttempt = ReturnType<typeof createRequestAttempt>;

/**
 * `checkSubmission`: asked before a delivery's first attempt goes out, a refusal ends it (submissionCheck).
 * `admission`: the worker's per-endpoint limits (docs/endpoint-health.md, "Limits: every attempt, per endpoint").
 */
export function createDeliverActivities(
  deps: DeliverDeps,
  checkSubmission?: () => Promise<AttemptFailureDetails | null>,
  admission?: EndpointAdmission | null,
) {
  const attempt = createAttempt(deps);
  return {
    /** One attempt: send, classify, and turn a failure into an ApplicationFailure of its class. */
    async sendAttempt(delivery: Delivery, attemptNumber: number, options: SendOptions = {}): Promise<AttemptSuccess> {
      const refused = attemptNumber === 1 ? await checkSubmission?.() : null;
      if (refused) throw attemptFailure(refused);
      const release = options.limited ? await firstAttemptLimits(admission, delivery) : undefined;
      let result: AttemptResult;
      const began = Date.now();
      try {
        result = await attempt(delivery, attemptNumber);
      } finally {
        release?.(Date.now() - began);
      }
      if (result.ok) return { code: result.code, reason: result.reason, durationMs: result.durationMs };
      throw attemptFailure(result);
    },
  };
}

/** What an attempt of `sendAttempt` that waits for room leaves the next one (heartbeat details). */
interface FirstAttemptHold {
  /** The rate's slot reserved for it (epoch ms). */
  reservedAt: number | null;
  /** How many times the breaker held it: its waits grow as its backoff would. */
  holds?: number;
  /** It was sent at this time: an attempt of the activity that finds this lost it with its worker. */
  sentAt?: number;
}

/**
 * The endpoint's limits and breaker before a first attempt: the release to call once it has ended, or the
 * failure that makes the activity wait on the server (no history event) for its room or, held by the
 * breaker, for its own backoff; or that ends the delivery unsent when neither comes before it expires (a
 * held telemetry QoS 0 message is dropped: it is sent once or not at all). One that finds it was sent
 * already lost it with its worker: a failure.
 */
async function firstAttemptLimits(admission: EndpointAdmission | null | undefined, delivery: Delivery) {
  const context = Context.current();
  const hold = savedHeartbeat<FirstAttemptHold>(context.info);
  const now = activityClock()();
  if (hold?.sentAt !== undefined) throw attemptFailure(lostAttempt(now - hold.sentAt));
  const agedFrom = context.info.scheduledTimestampMs;
  const holds = hold?.holds ?? 0;
  const holdUntil = () => heldUntil(delivery, { attempts: 0, holds, previousDelay: null, agedFrom, now });
  const reservedAt = hold?.reservedAt ?? null;
  const signal = context.cancellationSignal;
  const passed = await passLimits(admission, delivery, { reservedAt, expiry: expiresAt(delivery, agedFrom), now, holdUntil, signal });
  if (passed.go) {
    context.heartbeat({ reservedAt: null, sentAt: now } satisfies FirstAttemptHold);
    return passed.release;
  }
  const verdict = limitsVerdict(delivery, passed, { number: 1, holds });
  if (verdict.end) throw unsentFailure({ outcome: verdict.end, reason: verdict.reason });
  context.heartbeat(verdict.hold satisfies FirstAttemptHold);
  throw waitingFailure(verdict.at - now, verdict.words);
}

/** An attempt lost with its worker: it may have arrived (the message id lets the receiver tell). */
export function lostAttempt(durationMs: number): { ok: false } & AttemptFailureDetails {
  return {
    ok: false,
    class: 'connection',
    retryable: true,
    code: 'worker-lost',
    reason: 'the worker sending the attempt was lost before it answered; the message may have arrived, and is resent with its message id',
    durationMs,
  };
}

/** The activity's cancellation signal; none outside an activity (direct calls in tests). */
function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

/**
 * A worker shutting down lets attempts finish within its grace time, then cancels the rest: the attempt
 * is handed back as a retryable failure, so the workflow retries it on another worker right after its
 * backoff instead of waiting for the attempt to time out. Any other cancellation stays a cancellation.
 */
function handedBack(reason: unknown, durationMs: number): Error {
  if (!(reason instanceof CancelledFailure) || reason.message !== 'WORKER_SHUTDOWN')
    return reason instanceof Error ? reason : new CancelledFailure(String(reason));
  const details: AttemptFailureDetails = {
    class: 'connection',
    retryable: true,
    code: 'worker-shutdown',
    reason: 'the worker shut down during the attempt and handed it back; the message may have arrived, and is resent with its message id',
    durationMs,
  };
  return attemptFailure(details);
}
