import type { BackoffPolicy, BackoffPolicyInput, MessageKind } from '../policy/types';
import type { ClassOverrides, ErrorClass, Verdict } from '../classify/types';

export type { MessageKind };

/** What a producer submits (validated by `validateDelivery` before anything starts). */
export interface DeliveryInput {
  /**
   * Stable message id: the idempotency key, sent with every attempt. Printable ASCII without whitespace,
   * `/`, `+`, `#`; at most 160 characters (MAX_MESSAGE_ID_LENGTH). Default: a random UUID.
   */
  messageId?: string;
  kind: MessageKind;
  /** Telemetry only: 0 = at most once, 1 = retried until acknowledged. Default 1. */
  qos?: 0 | 1;
  /** Tenant and device: as messageId, at most 128 characters each. */
  tenant: string;
  device: string;
  /** An http(s) or mqtt(s) URL, or the full target: HttpTargetInput or MqttTargetInput, by the URL's scheme. */
  target: string | HttpTargetInput | MqttTargetInput;
  /** The message body: a string is sent as is, anything else as JSON. */
  payload: unknown;
  /**
   * Content type of the body: a header value, at most 256 characters. Default `application/json` for
   * non-strings, `text/plain` for strings.
   */
  contentType?: string;
  /** Command responses: the command's request id and status, and its deadline. */
  command?: { requestId: string; status?: number; deadline?: string | number | Date };
  policy?: BackoffPolicyInput;
  /** Map stable codes (`http-409`) to another class or to `success`. */
  overrides?: ClassOverrides;
  /**
   * Opt-in FIFO (docs/ordering.md): deliveries of one tenant with the same key reach their endpoints in
   * submit order, each attempted only once every earlier one has ended. As tenant, at most 128 characters.
   * Default: none (deliveries go side by side).
   */
  orderingKey?: string;
}

export interface HttpTargetInput {
  url: string;
  /** Default POST. */
  method?: 'POST' | 'PUT' | 'PATCH';
  /**
   * At most 64, 8 KiB in all; RFC 9110 names, printable-ASCII values. Not the ones redeliver or the HTTP
   * client sets (Message-Id, Content-Type, Host, Content-Length, Connection, …: headerProblems).
   */
  headers?: Record<string, string>;
  /** Attempt timeout: ms or a duration string. Default 10 s. */
  timeout?: number | string;
  /** Opt-in: the endpoint takes many messages in one request, and a batch's first attempts to it go so. Default: off. */
  batch?: HttpBatchingInput;
  /**
   * The name of a signing secret the worker resolves (docs/deliveries.md, "Signed requests"): every request carries
   * Standard Webhooks signatures made with it. The secret itself never travels with a delivery. Default: unsigned.
   */
  signing?: string;
}

/**
 * An endpoint that takes many messages in one request (docs/batches.md): the first attempts a batch makes to
 * it go together, as a JSON array or as NDJSON lines. A single submit, and every attempt after the first,
 * still sends one message per request.
 */
export interface HttpBatchingInput {
  /** `json`: a JSON array of messages; `ndjson`: one message per line. */
  format: 'json' | 'ndjson';
  /** Messages per request: 2 to 1,000. Default 100. */
  maxMessages?: number;
  /** Bytes of a request's body: 1 KiB to 4 MiB. Default 256 KiB. A message bigger than this alone is sent on its own. */
  maxBytes?: number;
}

export interface HttpBatching {
  format: 'json' | 'ndjson';
  maxMessages: number;
  maxBytes: number;
}

export interface HttpTarget {
  url: string;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  timeout: number;
  /** Absent unless the target opts in: deliveries recorded before it keep their shape (and fingerprint). */
  batch?: HttpBatching;
  /** The signing secret's name; absent when unsigned (as batch, deliveries before it keep their shape). */
  signing?: string;
}

export type MqttVersion = '3.1.1' | '5';

/**
 * An MQTT broker (`mqtt://host:port`, `mqtts://host:port`). Telemetry is published at the delivery's QoS,
 * events and command responses at QoS 1; at QoS 1 an attempt succeeds only on the broker's PUBACK.
 */
export interface MqttTargetInput {
  url: string;
  /**
   * The topic; `{tenant}`, `{device}`, `{requestId}`, `{status}` are filled in. Default per kind, as
   * Eclipse Hono's MQTT adapter names them: `telemetry/{tenant}/{device}`, `event/{tenant}/{device}`,
   * `command///res/{requestId}/{status}`.
   */
  topic?: string;
  /** `'5'` (default) or `'3.1.1'`. Only MQTT 5 carries the message id (as a user property). */
  protocolVersion?: MqttVersion;
  /**
   * The name of a credential the worker resolves (docs/mqtt.md, "Credentials"); the user name and
   * password themselves never travel with a delivery. Default: none (connect without).
   */
  credential?: string;
  /** Attempt timeout (connect when needed, and the PUBACK): ms or a duration string. Default 10 s. */
  timeout?: number | string;
  /** mqtts only: a CA certificate (PEM) to trust besides the system's, and the name to verify. */
  tls?: { ca?: string; servername?: string };
}

export interface MqttTarget {
  transport: 'mqtt';
  url: string;
  topic: string;
  protocolVersion: MqttVersion;
  credential: string | null;
  timeout: number;
  tls: { ca?: string; servername?: string } | null;
}

/** Where a delivery goes. HTTP targets have no `transport` field: deliveries recorded before MQTT keep their shape. */
export type Target = HttpTarget | MqttTarget;

export function isMqttTarget(target: Target): target is MqttTarget {
  return (target as MqttTarget).transport === 'mqtt';
}

/** A validated delivery, as the workflow receives it: every default filled in, durations in ms. */
export interface Delivery {
  deliveryId: string;
  messageId: string;
  kind: MessageKind;
  qos: 0 | 1;
  tenant: string;
  device: string;
  target: Target;
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
  /** Absent unless given: deliveries recorded before ordering keep their shape (and fingerprint). */
  orderingKey?: string;
}

export type Outcome = 'delivered' | 'rejected' | 'expired' | 'exhausted' | 'dropped' | 'cancelled';
/** `queued`: an ordered delivery waiting for the earlier deliveries of its key to end (docs/ordering.md). */
export type DeliveryStateName = 'pending' | 'queued' | 'attempting' | 'waiting' | 'paused' | Outcome;

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
  /** How the classifier judged it (`success`, `transient`, …); absent in attempts logged before it was kept. */
  class?: Verdict;
  /** The endpoint's answer, in the classifier's words (quoting what the server said). */
  answer?: string;
  /** The wait the server asked for (Retry-After), in ms, when it gave a usable one. */
  retryAfterMs?: number;
}

/** Read by `status`: where a delivery stands now. Field names are stable (JSON output). */
export interface DeliveryStatus {
  deliveryId: string;
  messageId: string;
  kind: MessageKind;
  /** null: unknown to a process without the keys (see `encrypted`). */
  qos: 0 | 1 | null;
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
  /** Its retry policy in words, where the reader knows it. */
  policy?: string;
  /** Set while paused: why, and since when. */
  pause: { reason: string; since: string } | null;
  /** Ordered deliveries only: its key, and while it is queued, the earlier delivery it waits for. */
  ordering?: OrderingPlace;
  /** A message of a batch that waits (or waited) in an outage hold instead of a delivery of its own: the hold's workflow id. */
  hold?: { holdId: string };
  /** The batch it came in (docs/batches.md), when it came in one: its batch id and the batch's workflow id. */
  batch?: { batchId: string; workflowId: string };
  /**
   * Set when this process has no key to read the delivery (it has no REDELIVER_ENCRYPTION_KEYS): the fields
   * come from what Temporal keeps in the clear (its id and search attributes); times, errors and the attempt
   * log are then empty, and `summary` says so.
   */
  encrypted?: { keyId: string | null };
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
  /** Its last attempts (most recent last), at most 20; absent from deliveries that ended before it was kept. */
  attemptLog?: AttemptRecord[];
  /** Its retry policy in words (absent from deliveries that ended before it was kept). */
  policy?: string;
  /** Dead letters only: the whole delivery (message, target, policy), kept for redrive. */
  message?: Delivery;
  /** Set when this process has no key to read the result: outcome and attempts come from the search attributes. */
  encrypted?: { keyId: string | null };
}

/** Where an ordered delivery stands on its key (DeliveryStatus.ordering). */
export interface OrderingPlace {
  key: string;
  /** Whether its turn has come: the earlier deliveries of its key have ended. */
  admitted: boolean;
  /** While queued: the delivery just before it on the key (null until the key's sequencer says). */
  behind: string | null;
  /** While queued behind a dead letter that stopped the key: that dead letter and its outcome. */
  blockedBy: { deliveryId: string; outcome: Outcome } | null;
}
