import type { BackoffPolicy, BackoffPolicyInput, MessageKind } from '../policy/types';
import type { ClassOverrides, ErrorClass } from '../classify/types';

export type { MessageKind };

/** What a producer submits (validated by `validateDelivery` before anything starts). */
export interface DeliveryInput {
  /** Stable message id: the idempotency key, sent with every attempt. Default: a random UUID. */
  messageId?: string;
  kind: MessageKind;
  /** Telemetry only: 0 = at most once, 1 = retried until acknowledged. Default 1. */
  qos?: 0 | 1;
  tenant: string;
  device: string;
  /** An http(s) URL, or the full target. */
  target: string | HttpTargetInput;
  /** The message body: a string is sent as is, anything else as JSON. */
  payload: unknown;
  /** Content type of the body. Default `application/json` for non-strings, `text/plain` for strings. */
  contentType?: string;
  /** Command responses: the command's request id and status, and its deadline. */
  command?: { requestId: string; status?: number; deadline?: string | number | Date };
  policy?: BackoffPolicyInput;
  /** Map stable codes (`http-409`) to another class or to `success`. */
  overrides?: ClassOverrides;
}

export interface HttpTargetInput {
  url: string;
  /** Default POST. */
  method?: 'POST' | 'PUT' | 'PATCH';
  headers?: Record<string, string>;
  /** Attempt timeout: ms or a duration string. Default 10 s. */
  timeout?: number | string;
}

export interface HttpTarget {
  url: string;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  timeout: number;
}

/** A validated delivery, as the workflow receives it: every default filled in, durations in ms. */
export interface Delivery {
  deliveryId: string;
  messageId: string;
  kind: MessageKind;
  qos: 0 | 1;
  tenant: string;
  device: string;
  target: HttpTarget;
  /** The target's host[:port]: the `Endpoint` search attribute. */
  endpoint: string;
  /** The body, already encoded as text. */
  body: string;
  contentType: string;
  command: { requestId: string; status: number } | null;
  policy: BackoffPolicy;
  overrides: ClassOverrides;
  /** When the producer submitted it (epoch ms). */
  submittedAt: number;
}

export type Outcome = 'delivered' | 'rejected' | 'expired' | 'exhausted' | 'dropped' | 'cancelled';
export type DeliveryStateName = 'pending' | 'attempting' | 'waiting' | 'paused' | Outcome;

export interface AttemptError {
  class: ErrorClass;
  code: string;
  reason: string;
  /** Attempt number that failed (1-based). */
  attempt: number;
  /** ISO time the attempt ended. */
  at: string;
}

/** One attempt, as kept in the status's attempt log. */
export interface AttemptRecord {
  attempt: number;
  startedAt: string;
  durationMs: number;
  /** `http-202`, `http-503`, `net-ECONNREFUSED`, `timeout`, … */
  code: string;
  ok: boolean;
}

/** Read by `status`: where a delivery stands now. Field names are stable (JSON output). */
export interface DeliveryStatus {
  deliveryId: string;
  messageId: string;
  kind: MessageKind;
  qos: 0 | 1;
  tenant: string;
  device: string;
  endpoint: string;
  state: DeliveryStateName;
  attempts: number;
  firstAttemptAt: string | null;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  lastError: AttemptError | null;
  /** The last attempts (most recent last), at most 20. */
  attemptLog: AttemptRecord[];
  /** One sentence: what the delivery is doing. */
  summary: string;
  /** Set while paused: why, and since when. */
  pause: { reason: string; since: string } | null;
}

/** What a finished delivery returns. A dead letter (rejected, expired, exhausted, dropped) keeps its message. */
export interface DeliveryResult {
  deliveryId: string;
  messageId: string;
  outcome: Outcome;
  attempts: number;
  firstAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastError: AttemptError | null;
  /** Why it ended so, in words. */
  reason: string;
  /** Dead letters only: the whole delivery (message, target, policy), kept for redrive. */
  message?: Delivery;
}
