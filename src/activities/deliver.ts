import { ApplicationFailure } from '@temporalio/activity';
import type { Dispatcher } from 'undici';
import { classify, FAILURE_TYPES, type Classification } from '../classify';
import type { Delivery } from '../delivery/types';
import { sendHttp } from '../transports/http';

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
    ...delivery.target.headers,
    'content-type': delivery.contentType,
    'message-id': delivery.messageId,
    'delivery-attempt': String(attempt),
  };
  // Hono's HTTP adapter reads the telemetry QoS from this header
  if (delivery.kind === 'telemetry') headers['qos-level'] = String(delivery.qos);
  return headers;
}

export function createDeliverActivities(deps: { http: Dispatcher; now?: () => number }) {
  const now = deps.now ?? Date.now;
  return {
    /** One attempt: send, classify, and turn a failure into an ApplicationFailure of its class. */
    async sendAttempt(delivery: Delivery, attempt: number): Promise<AttemptSuccess> {
      const { outcome, durationMs } = await sendHttp(
        {
          url: delivery.target.url,
          method: delivery.target.method,
          headers: deliveryHeaders(delivery, attempt),
          body: delivery.body,
          timeoutMs: delivery.target.timeout,
        },
        deps.http,
      );
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
