import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { Dispatcher } from 'undici';
import { classify, FAILURE_TYPES, type Classification } from '../classify';
import { mqttQos } from '../delivery/summary';
import { isMqttTarget, type Delivery, type MqttTarget } from '../delivery/types';
import { sendHttp } from '../transports/http';
import { createMqttPool, type MqttPool, type MqttPublish } from '../transports/mqtt';

/** What a successful attempt returns to the workflow. */
export interface AttemptSuccess {
  code: string;
  reason: string;
  durationMs: number;
}

/** Carried in a failed attempt's ApplicationFailure details, for the workflow to decide. */
export interface AttemptFailureDetails extends Classification {
  durationMs: number;
}

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

/**
 * One MQTT attempt of a delivery. The stable message id and the attempt number travel as MQTT 5 user
 * properties (`message-id`, `delivery-attempt`), as the HTTP headers of the same names do.
 */
export function mqttPublishOf(delivery: Delivery, target: MqttTarget, attempt: number, signal?: AbortSignal): MqttPublish {
  return {
    url: target.url,
    protocolVersion: target.protocolVersion,
    credential: target.credential,
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

export function createDeliverActivities(deps: { http: Dispatcher; mqtt?: MqttPool; now?: () => number }) {
  const now = deps.now ?? Date.now;
  // made on first use when the worker passed none: a worker that never sees an MQTT target opens nothing
  let pool = deps.mqtt;
  const mqtt = () => (pool ??= createMqttPool());
  return {
    /** One attempt: send, classify, and turn a failure into an ApplicationFailure of its class. */
    async sendAttempt(delivery: Delivery, attempt: number): Promise<AttemptSuccess> {
      const cancelled = cancellationSignal();
      const target = delivery.target;
      const { outcome, durationMs } = isMqttTarget(target)
        ? await mqtt().publish(mqttPublishOf(delivery, target, attempt, cancelled))
        : await sendHttp(
            {
              url: target.url,
              method: target.method,
              headers: deliveryHeaders(delivery, attempt),
              body: delivery.body,
              timeoutMs: target.timeout,
              ...(cancelled && { signal: cancelled }),
            },
            deps.http,
          );
      if (cancelled?.aborted) throw handedBack(cancelled.reason, durationMs);
      const c = classify(outcome, delivery.overrides, now());
      if (c.class === 'success') return { code: c.code, reason: c.reason, durationMs };
      const details: AttemptFailureDetails = { ...c, durationMs };
      throw ApplicationFailure.create({
        type: FAILURE_TYPES[c.class],
        message: c.reason,
        nonRetryable: !c.retryable,
        details: [details],
      });
    },
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
  if (!(reason instanceof CancelledFailure) || reason.message !== 'WORKER_SHUTDOWN') return reason instanceof Error ? reason : new CancelledFailure(String(reason));
  const details: AttemptFailureDetails = {
    class: 'connection',
    retryable: true,
    code: 'worker-shutdown',
    reason: 'the worker shut down during the attempt and handed it back; the message may have arrived, and is resent with its message id',
    durationMs,
  };
  return ApplicationFailure.create({ type: FAILURE_TYPES.connection, message: details.reason, details: [details] });
}
