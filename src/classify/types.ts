/** What an unchanged retry can expect; see docs/error-classification.md. */
export type ErrorClass = 'client' | 'well-known' | 'server' | 'connection';

/** A class, or success (an override may turn a code into success, e.g. 409 → delivered). */
export type Verdict = ErrorClass | 'success';

/** The MQTT 5 packets a server ends a publish (or, SUBACK, a subscribe) attempt with. */
export type Mqtt5Packet = 'connack' | 'puback' | 'disconnect' | 'suback';

/** What a transport saw on one attempt. */
export type TransportOutcome =
  /** An HTTP response; `detail` is the start of an error response's body, for the reason. */
  | { kind: 'http'; status: number; headers?: Record<string, string | string[] | undefined>; detail?: string }
  /** An MQTT 5 reason code (CONNACK refusing the connection, PUBACK, or a server DISCONNECT), with its properties. */
  | { kind: 'mqtt5'; packet: Mqtt5Packet; reasonCode: number; reasonString?: string; serverReference?: string }
  /** An MQTT 3.1.1 CONNACK refusing the connection (return codes 1–5). */
  | { kind: 'mqtt3-connack'; returnCode: number }
  /** Published at QoS 0: written to an open connection, which is all MQTT promises at QoS 0 (no acknowledgement). */
  | { kind: 'mqtt-sent' }
  /** Connected and published at QoS 1, but no PUBACK came within the attempt timeout. */
  | { kind: 'mqtt-no-puback'; afterMs: number }
  /** The broker closed the connection before acknowledging, without a reason code (MQTT 3.1.1's only error signal). */
  | { kind: 'mqtt-closed'; message?: string }
  /** Hono's MQTT adapter published an error for this message on the device's error topic: an HTTP status. */
  | { kind: 'mqtt-error-topic'; status: number; message?: string }
  /** A Node network error code (ECONNREFUSED, ECONNRESET, EAI_AGAIN, …). */
  | { kind: 'network'; code: string; message?: string }
  /** No outcome within the attempt timeout. */
  | { kind: 'timeout'; afterMs: number }
  /** The TLS handshake failed: an OpenSSL or Node code (DEPTH_ZERO_SELF_SIGNED_CERT, ERR_TLS_CERT_ALTNAME_INVALID, …). */
  | { kind: 'tls'; code: string; message?: string }
  /** The target cannot be sent to at all (an invalid URL, an unsupported scheme). */
  | { kind: 'invalid-target'; message: string }
  /** The SSRF guard refused the address the target resolved to: `range` names it, `description` says it in words. */
  | { kind: 'blocked-address'; host: string; address: string; range: string; description: string }
  /** The worker's secret the target names (`MQTT credential "hub-acme"`) is not bound to `target`: nothing was sent. */
  | { kind: 'unbound-secret'; secret: string; target: string; hint: string }
  /** The worker's secret the target names is not for the delivery's tenant: nothing was sent. */
  | { kind: 'foreign-secret'; secret: string; tenant: string; hint: string };

export interface Classification {
  class: Verdict;
  /** Whether an unchanged retry can succeed. */
  retryable: boolean;
  /** Stable code: `http-503`, `mqtt-0x97`, `net-ECONNRESET`, `timeout`, `tls-…`, … */
  code: string;
  /** One sentence an operator understands. */
  reason: string;
  /** The server's hint of how long to wait (Retry-After), when it gave a usable one and a retry makes sense. */
  retryAfterMs?: number;
}

/** Per-delivery overrides: a stable code (`http-409`) mapped to another verdict. */
export type ClassOverrides = Record<string, Verdict>;
