import type { Mqtt5Packet, Verdict } from './types';

/** One row of the classification table: docs/error-classification.md is rendered from these rows. */
export interface ClassificationRow {
  /** A stable code, or a family (`http-4xx`, `net-*`, …) that codes without a row of their own fall into. */
  code: string;
  /** What else decides when the code alone does not (503 with or without Retry-After). */
  when?: string;
  /** MQTT 5 only: the packets a server may send this reason code in (MQTT 5.0 §2.4, table 2-6). */
  packets?: readonly Mqtt5Packet[];
  class: Verdict;
  /** What the condition means, by its protocol and, where Eclipse Hono's adapters define one, by Hono. */
  meaning: string;
  /** The operator's sentence; `{status}`, `{code}`, `{packet}` and `{timeout}` are filled in. */
  reason: string;
}

/** Families: a code without a row of its own takes its family's row. */
export const FAMILY = {
  http2xx: 'http-2xx',
  http3xx: 'http-3xx',
  http4xx: 'http-4xx',
  http5xx: 'http-5xx',
  mqtt5: 'mqtt-0x??',
  mqtt3Connack: 'mqtt3-connack-0x??',
  network: 'net-*',
  tls: 'tls-*',
} as const;

/** The `when` of the two MQTT 5 family rows. */
export const MQTT5_FAMILY_WHEN = { success: 'another code below 0x80, in a PUBACK', failure: 'another code from 0x80' } as const;
export const RETRY_AFTER_WHEN = { with: 'with a usable Retry-After', without: 'without a usable Retry-After' } as const;

const NO_RETRY = 'an unchanged retry cannot succeed';
const BACKOFF = 'retried with backoff';
const RESEND = 'reconnected and resent';
const ALL: readonly Mqtt5Packet[] = ['connack', 'puback', 'disconnect'];
/** The failure codes a SUBACK may carry as well (MQTT 5.0 §3.9.3). */
const WITH_SUBACK: readonly Mqtt5Packet[] = [...ALL, 'suback'];
const CONNACK_DISCONNECT: readonly Mqtt5Packet[] = ['connack', 'disconnect'];

const http = (status: number, cls: Verdict, name: string, meaning: string, consequence: string): ClassificationRow => ({
  code: `http-${status}`,
  class: cls,
  meaning,
  reason: `HTTP ${status} ${name}: ${consequence}`,
});

const mqtt5 = (
  hex: string,
  packets: readonly Mqtt5Packet[],
  cls: Verdict,
  name: string,
  meaning: string,
  consequence: string,
): ClassificationRow => ({
  code: `mqtt-${hex}`,
  packets,
  class: cls,
  meaning: `${name} — ${meaning}`,
  reason: `MQTT {packet} ${hex} ${name}: ${consequence}`,
});

const tls = (code: string, meaning: string): ClassificationRow => ({
  code: `tls-${code}`,
  class: 'connection',
  meaning,
  reason: `TLS failure (${code}): ${meaning.charAt(0).toLowerCase()}${meaning.slice(1).replace(/\.$/, '')}; ${BACKOFF} in case the endpoint fixes it`,
});

const net = (code: string, cls: Verdict, meaning: string, reason: string): ClassificationRow => ({
  code: `net-${code}`,
  class: cls,
  meaning,
  reason,
});

export const CLASSIFICATION_TABLE: readonly ClassificationRow[] = [
  // HTTP (Hono: HTTP adapter user guide; the same statuses arrive on the MQTT adapter's error topic)
  http(200, 'success', 'OK', 'Hono: accepted; the response carries a command for the device.', 'the endpoint accepted the message'),
  http(
    202,
    'success',
    'Accepted',
    'Hono: telemetry accepted (with QoS-Level 1: accepted by a downstream consumer), event persisted, command response delivered to the application.',
    'the endpoint accepted the message',
  ),
  http(204, 'success', 'No Content', 'Accepted, nothing to answer.', 'the endpoint accepted the message'),
  {
    code: FAMILY.http2xx,
    class: 'success',
    meaning: 'Any other 2xx: success.',
    reason: 'HTTP {status}: the endpoint accepted the message',
  },
  {
    code: FAMILY.http3xx,
    class: 'client',
    meaning: 'A redirect. redeliver does not follow redirects: a message is not sent somewhere it was not addressed to.',
    reason: `HTTP {status}: the endpoint redirects elsewhere and redeliver does not follow redirects; point the delivery at the new URL`,
  },
  http(
    400,
    'client',
    'Bad Request',
    'Hono: an empty body without content-type, an invalid qos-level header, a command response without its status; on the error topic, an invalid PUBLISH topic.',
    `the endpoint cannot process the request as it is; ${NO_RETRY}`,
  ),
  http(
    401,
    'client',
    'Unauthorized',
    'Hono: the request carries no valid credentials.',
    `the credentials are missing or not valid; ${NO_RETRY}`,
  ),
  http(
    403,
    'client',
    'Forbidden',
    "Hono: the device's registration status cannot be asserted, e.g. the tenant may not use this protocol adapter.",
    `the endpoint does not let this device or tenant send here; ${NO_RETRY}`,
  ),
  http(
    404,
    'client',
    'Not Found',
    'Hono: the device is disabled or does not exist.',
    `the device is unknown or disabled, or the URL is wrong; ${NO_RETRY}`,
  ),
  http(
    405,
    'client',
    'Method Not Allowed',
    'The URL does not take this method.',
    `the endpoint does not take this method at this URL; ${NO_RETRY}`,
  ),
  http(
    408,
    'connection',
    'Request Timeout',
    'The server stopped waiting for the rest of the request; RFC 9110 lets the client send it again.',
    `the request did not reach the endpoint in full in time; ${RESEND}`,
  ),
  http(
    409,
    'client',
    'Conflict',
    'A receiver that deduplicates by message id may answer so for a message it already has: override `http-409` to `success` for it.',
    `the endpoint refused the message as conflicting; ${NO_RETRY}`,
  ),
  http(410, 'client', 'Gone', 'The endpoint was removed for good.', `the endpoint no longer exists; ${NO_RETRY}`),
  http(
    413,
    'client',
    'Content Too Large',
    "Hono: the body exceeds the adapter's maximum size.",
    `the message is bigger than the endpoint accepts; ${NO_RETRY}`,
  ),
  http(
    414,
    'client',
    'URI Too Long',
    'The target URL is longer than the server accepts.',
    `the target URL is longer than the endpoint accepts; ${NO_RETRY}`,
  ),
  http(
    415,
    'client',
    'Unsupported Media Type',
    'The content type is not accepted.',
    `the endpoint does not accept this content type; ${NO_RETRY}`,
  ),
  http(
    422,
    'client',
    'Unprocessable Content',
    'Well-formed, but the content is refused.',
    `the endpoint refuses the content of the message; ${NO_RETRY}`,
  ),
  http(
    429,
    'well-known',
    'Too Many Requests',
    "Hono: the tenant's message limit for the current accounting period is exceeded; Hono sends no Retry-After, the limit resets with the period.",
    `the endpoint's rate or message limit is reached; retried after its Retry-After, or with backoff when it gives none`,
  ),
  {
    code: FAMILY.http4xx,
    class: 'client',
    meaning: 'Any other 4xx: a client error, by its family.',
    reason: `HTTP {status}: the endpoint refused the request (a 4xx status without a row of its own, taken as a client error); ${NO_RETRY}`,
  },
  http(
    500,
    'server',
    'Internal Server Error',
    "A generic, transient failure: the guide's own example of a generic server error.",
    `a transient failure at the endpoint; ${BACKOFF}`,
  ),
  http(
    501,
    'client',
    'Not Implemented',
    'The server does not support what the request needs.',
    `the endpoint does not support this request; ${NO_RETRY}`,
  ),
  http(
    502,
    'server',
    'Bad Gateway',
    'A proxy could not get an answer from the server behind it.',
    `a proxy in front of the endpoint could not reach it; ${BACKOFF}`,
  ),
  {
    ...http(
      503,
      'well-known',
      'Service Unavailable',
      "Hono's HTTP adapter answers so, with Retry-After: 2, when no consumer is connected for the tenant or it gives no credit, when the consumer did not accept a QoS 1 telemetry message or an event (or did not settle it in time), or when no application waits for the command response.",
      'the endpoint cannot take the message now (Hono: no consumer connected, or it did not accept); retried after its Retry-After',
    ),
    when: RETRY_AFTER_WHEN.with,
  },
  {
    ...http(
      503,
      'server',
      'Service Unavailable',
      "A generic, transient failure; Hono's error topic reports its 503 conditions so.",
      `the endpoint is temporarily unavailable; ${BACKOFF}`,
    ),
    when: RETRY_AFTER_WHEN.without,
  },
  http(
    504,
    'server',
    'Gateway Timeout',
    'A proxy got no answer in time from the server behind it.',
    `a proxy in front of the endpoint got no answer in time; ${BACKOFF}`,
  ),
  {
    code: FAMILY.http5xx,
    class: 'server',
    meaning: 'Any other 5xx, and any status HTTP does not define: a server error, by its family.',
    reason: `HTTP {status}: the endpoint failed (a status without a row of its own, taken as a server error); ${BACKOFF}`,
  },

  // MQTT 5 reason codes (MQTT 5.0 §2.4; Hono: MQTT adapter user guide, resource limit checks)
  mqtt5('0x00', ['puback'], 'success', 'Success', 'the broker accepted the QoS 1 message.', 'the broker accepted the message'),
  mqtt5(
    '0x10',
    ['puback'],
    'success',
    'No matching subscribers',
    'accepted, though nobody subscribes to the topic now.',
    'the broker accepted the message, though no one subscribes to its topic',
  ),
  mqtt5(
    '0x80',
    WITH_SUBACK,
    'server',
    'Unspecified error',
    'the broker does not say why.',
    `the broker failed without saying why; ${BACKOFF}`,
  ),
  mqtt5(
    '0x81',
    CONNACK_DISCONNECT,
    'client',
    'Malformed Packet',
    'the broker could not parse the packet.',
    `the broker could not parse the packet; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x82',
    CONNACK_DISCONNECT,
    'client',
    'Protocol Error',
    'an unexpected or out-of-order packet.',
    `the broker saw a protocol violation; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x83',
    WITH_SUBACK,
    'server',
    'Implementation specific error',
    'valid, but the broker does not take it, for a reason of its own.',
    `the broker did not take the message, for a reason of its own; ${BACKOFF}`,
  ),
  mqtt5(
    '0x84',
    ['connack'],
    'client',
    'Unsupported Protocol Version',
    'the broker does not speak MQTT 5.',
    `the broker does not speak MQTT 5; use MQTT 3.1.1 for this target`,
  ),
  mqtt5(
    '0x85',
    ['connack'],
    'client',
    'Client Identifier not valid',
    'the broker does not allow this client id.',
    `the broker does not allow this client id; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x86',
    ['connack'],
    'client',
    'Bad User Name or Password',
    'Hono: unknown or disabled device, or wrong credentials.',
    `the broker does not accept the credentials; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x87',
    WITH_SUBACK,
    'client',
    'Not authorized',
    'Hono: e.g. the tenant may not use the adapter.',
    `the broker does not allow this client to connect, publish or subscribe here; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x88',
    ['connack'],
    'server',
    'Server unavailable',
    'Hono: a service the adapter depends on is unavailable.',
    `the broker is unavailable; ${BACKOFF}`,
  ),
  mqtt5('0x89', CONNACK_DISCONNECT, 'server', 'Server busy', 'try again later.', `the broker is busy; ${BACKOFF}`),
  mqtt5('0x8a', ['connack'], 'client', 'Banned', 'by administrative action.', `the broker has banned this client; ${NO_RETRY}`),
  mqtt5('0x8b', ['disconnect'], 'connection', 'Server shutting down', 'the broker goes away.', `the broker is shutting down; ${RESEND}`),
  mqtt5(
    '0x8c',
    CONNACK_DISCONNECT,
    'client',
    'Bad authentication method',
    'the broker does not support it.',
    `the broker does not support the authentication method; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x8d',
    ['disconnect'],
    'connection',
    'Keep Alive timeout',
    'the broker heard nothing for 1.5 keep-alive periods.',
    `the broker timed the connection out; ${RESEND}`,
  ),
  mqtt5(
    '0x8e',
    ['disconnect'],
    'connection',
    'Session taken over',
    'another connection with the same client id connected.',
    `another connection took the session over; ${RESEND}`,
  ),
  mqtt5(
    '0x8f',
    ['suback', 'disconnect'],
    'client',
    'Topic Filter invalid',
    'well-formed, but not accepted.',
    `the broker does not accept the topic filter; ${NO_RETRY}`,
  ),
  mqtt5('0x90', ALL, 'client', 'Topic Name invalid', 'well-formed, but not accepted.', `the broker does not accept the topic; ${NO_RETRY}`),
  mqtt5(
    '0x91',
    ['puback', 'suback'],
    'connection',
    'Packet Identifier in use',
    'client and broker disagree about the session state.',
    `the session state is out of step; ${RESEND} on a fresh session`,
  ),
  mqtt5(
    '0x93',
    ['disconnect'],
    'connection',
    'Receive Maximum exceeded',
    'more unacknowledged messages in flight than the broker allows.',
    `too many messages were in flight; ${RESEND}`,
  ),
  mqtt5(
    '0x94',
    ['disconnect'],
    'connection',
    'Topic Alias invalid',
    'the broker does not know the topic alias.',
    `the topic alias was not valid; ${RESEND}`,
  ),
  mqtt5(
    '0x95',
    CONNACK_DISCONNECT,
    'client',
    'Packet too large',
    'over the maximum packet size.',
    `the message is bigger than the broker accepts; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x96',
    ['disconnect'],
    'well-known',
    'Message rate too high',
    'the broker wants fewer messages per second.',
    `the broker wants fewer messages per second; ${BACKOFF}`,
  ),
  mqtt5(
    '0x97',
    WITH_SUBACK,
    'well-known',
    'Quota exceeded',
    "Hono: the tenant's connection, connection-time or message limit is reached.",
    `a quota is used up; ${BACKOFF} until it frees up`,
  ),
  mqtt5(
    '0x98',
    ['disconnect'],
    'connection',
    'Administrative action',
    'an administrator disconnected the client.',
    `an administrator disconnected the client; ${RESEND}`,
  ),
  mqtt5(
    '0x99',
    ALL,
    'client',
    'Payload format invalid',
    'the payload does not match its format indicator.',
    `the payload does not match its declared format; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x9a',
    CONNACK_DISCONNECT,
    'client',
    'Retain not supported',
    'the broker does not retain messages.',
    `the broker does not support retained messages; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x9b',
    CONNACK_DISCONNECT,
    'client',
    'QoS not supported',
    'the broker does not support this QoS.',
    `the broker does not support this QoS; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x9c',
    CONNACK_DISCONNECT,
    'well-known',
    'Use another server',
    'for now, the one in the Server Reference. Hono: the adapter instance has reached its connection limit.',
    `the broker sends the client elsewhere for now; ${BACKOFF}`,
  ),
  mqtt5(
    '0x9d',
    CONNACK_DISCONNECT,
    'well-known',
    'Server moved',
    'for good, to the one in the Server Reference.',
    `the broker has moved; ${BACKOFF} until the target is updated`,
  ),
  mqtt5(
    '0x9e',
    ['suback', 'disconnect'],
    'client',
    'Shared Subscriptions not supported',
    'a subscription feature the broker lacks.',
    `the broker lacks shared subscriptions; ${NO_RETRY}`,
  ),
  mqtt5(
    '0x9f',
    CONNACK_DISCONNECT,
    'well-known',
    'Connection rate exceeded',
    'the client connects too often.',
    `the client connects too often; ${BACKOFF}`,
  ),
  mqtt5(
    '0xa0',
    ['disconnect'],
    'connection',
    'Maximum connect time',
    'the broker ends long connections.',
    `the connection reached its maximum time; ${RESEND}`,
  ),
  mqtt5(
    '0xa1',
    ['suback', 'disconnect'],
    'client',
    'Subscription Identifiers not supported',
    'a subscription feature the broker lacks.',
    `the broker lacks subscription identifiers; ${NO_RETRY}`,
  ),
  mqtt5(
    '0xa2',
    ['suback', 'disconnect'],
    'client',
    'Wildcard Subscriptions not supported',
    'a subscription feature the broker lacks.',
    `the broker lacks wildcard subscriptions; ${NO_RETRY}`,
  ),
  {
    code: FAMILY.mqtt5,
    when: MQTT5_FAMILY_WHEN.success,
    class: 'success',
    meaning: 'MQTT 5: a reason code below 0x80 means success.',
    reason: 'MQTT PUBACK {code}: the broker accepted the message',
  },
  {
    code: FAMILY.mqtt5,
    when: MQTT5_FAMILY_WHEN.failure,
    class: 'server',
    meaning: 'MQTT 5: a reason code from 0x80 is a failure; without a row of its own, a generic one.',
    reason: `MQTT {packet} {code}: the broker refused, with a code redeliver does not know; ${BACKOFF}`,
  },

  // MQTT 3.1.1 CONNACK return codes (MQTT 3.1.1 §3.2.2.3; Hono: MQTT adapter user guide and source)
  {
    code: 'mqtt3-connack-0x01',
    class: 'client',
    meaning: 'Unacceptable protocol version.',
    reason: `MQTT CONNACK 0x01: the broker does not speak MQTT 3.1.1; ${NO_RETRY}`,
  },
  {
    code: 'mqtt3-connack-0x02',
    class: 'client',
    meaning: 'Identifier rejected.',
    reason: `MQTT CONNACK 0x02: the broker rejects the client id; ${NO_RETRY}`,
  },
  {
    code: 'mqtt3-connack-0x03',
    class: 'server',
    meaning: 'Server unavailable. Hono: the adapter instance has reached its connection limit, or a service it depends on is unavailable.',
    reason: `MQTT CONNACK 0x03: the broker is unavailable; ${BACKOFF}`,
  },
  {
    code: 'mqtt3-connack-0x04',
    class: 'client',
    meaning: 'Bad user name or password. Hono: unknown or disabled device, or wrong credentials.',
    reason: `MQTT CONNACK 0x04: the broker does not accept the credentials; ${NO_RETRY}`,
  },
  {
    code: 'mqtt3-connack-0x05',
    class: 'well-known',
    meaning:
      "Not authorized. Hono also answers so when the tenant's connection, connection-time or message limit is reached (MQTT 3.1.1 has no quota code), so it is waited out, not rejected; override it to `client` for a broker that means authorization only.",
    reason: `MQTT CONNACK 0x05: the broker refuses the connection as not authorized, which Hono also says when a tenant's quota is used up; ${BACKOFF}`,
  },
  {
    code: FAMILY.mqtt3Connack,
    class: 'server',
    meaning: 'A return code MQTT 3.1.1 reserves.',
    reason: `MQTT CONNACK {code}: the broker refused the connection with a code redeliver does not know; ${BACKOFF}`,
  },

  // MQTT, either version
  {
    code: 'mqtt-sent',
    class: 'success',
    meaning: 'QoS 0: the PUBLISH was written to an open connection. MQTT acknowledges nothing at QoS 0, so this is all a sender can know.',
    reason: 'the message was sent at QoS 0, which MQTT does not acknowledge',
  },
  {
    code: 'mqtt-no-puback',
    class: 'connection',
    meaning:
      'No PUBACK within the attempt timeout. Hono withholds it on an error when the topic says `on-error=skip-ack`; otherwise the connection is lost.',
    reason: `no PUBACK within the attempt timeout of {timeout} ms: the broker withheld it or the connection is lost; ${RESEND}`,
  },
  {
    code: 'mqtt-closed',
    class: 'connection',
    meaning:
      "The broker closed the connection before acknowledging. Hono's MQTT adapter does so on any error with a message when the device has no error-topic subscription (MQTT 3.1.1 can say no more); also a CONNACK or DISCONNECT with a success code that ends the attempt.",
    reason: `the broker closed the connection before acknowledging the message; ${RESEND}`,
  },

  // Node network errors, as the HTTP transport reports them
  net(
    'ECONNREFUSED',
    'connection',
    "Nothing listens at the endpoint's address and port.",
    `connection refused: nothing listens at the endpoint's address (ECONNREFUSED); ${BACKOFF}`,
  ),
  net(
    'ECONNRESET',
    'connection',
    "The peer reset or closed the connection before the response was complete (undici: ECONNRESET, or UND_ERR_SOCKET 'other side closed').",
    `the connection broke before the response was complete (ECONNRESET); the message may have arrived, and is resent with its message id`,
  ),
  net(
    'EPIPE',
    'connection',
    'The connection closed while the request was being written.',
    `the connection closed while the request was being sent (EPIPE); ${RESEND}`,
  ),
  net(
    'ETIMEDOUT',
    'connection',
    "Connecting timed out (the system's, or undici's connect timeout UND_ERR_CONNECT_TIMEOUT).",
    `connecting to the endpoint timed out (ETIMEDOUT); ${BACKOFF}`,
  ),
  net('EHOSTUNREACH', 'connection', "No route to the endpoint's host.", `no route to the endpoint's host (EHOSTUNREACH); ${BACKOFF}`),
  net(
    'ENETUNREACH',
    'connection',
    "The endpoint's network is unreachable.",
    `the endpoint's network is unreachable (ENETUNREACH); ${BACKOFF}`,
  ),
  net(
    'EAI_AGAIN',
    'connection',
    'The DNS lookup failed for now.',
    `the endpoint's host name could not be looked up for now (EAI_AGAIN); ${BACKOFF}`,
  ),
  net(
    'ENOTFOUND',
    'connection',
    'The host name does not resolve. Retried, since DNS recovers and new names appear; override `net-ENOTFOUND` to `client` to fail fast on a typo.',
    `the endpoint's host name does not resolve (ENOTFOUND); ${BACKOFF}, check the URL if this persists`,
  ),
  net(
    'EPROTO',
    'connection',
    "The endpoint answered something that is not HTTP/1.1 (undici's parser errors HPE_…).",
    `the endpoint's answer is not valid HTTP; ${BACKOFF}`,
  ),
  {
    code: FAMILY.network,
    class: 'connection',
    meaning: 'Any other network error: no usable response.',
    reason: `network error {code} (without a row of its own, taken as a lost connection); ${BACKOFF}`,
  },

  // TLS (Node and OpenSSL codes); never retried without verification
  tls('DEPTH_ZERO_SELF_SIGNED_CERT', 'The endpoint presents a self-signed certificate that is not trusted.'),
  tls('SELF_SIGNED_CERT_IN_CHAIN', "The endpoint's certificate chain ends in a CA that is not trusted."),
  tls('UNABLE_TO_VERIFY_LEAF_SIGNATURE', "The issuer of the endpoint's certificate is unknown, from an incomplete chain or a private CA."),
  tls('UNABLE_TO_GET_ISSUER_CERT_LOCALLY', "The issuer of the endpoint's certificate is not in the trust store."),
  tls('CERT_HAS_EXPIRED', "The endpoint's certificate has expired."),
  tls('ERR_TLS_CERT_ALTNAME_INVALID', "The endpoint's certificate is for another host name."),
  tls('ERR_SSL_WRONG_VERSION_NUMBER', 'The endpoint does not speak TLS on this port, as with https:// to a plain HTTP port.'),
  {
    code: FAMILY.tls,
    class: 'connection',
    meaning: 'Any other TLS failure.',
    reason: `TLS failure ({code}, without a row of its own, taken as a failed connection); ${BACKOFF} in case the endpoint fixes it`,
  },

  // the attempt itself
  {
    code: 'timeout',
    class: 'connection',
    meaning: 'No response within the attempt timeout: by the guide, the connection may be interrupted.',
    reason: 'no response within the attempt timeout of {timeout} ms; the message may have arrived, and is resent with its message id',
  },
  {
    code: 'invalid-target',
    class: 'client',
    meaning: 'The target URL is invalid or its scheme not supported (submit refuses most such targets already).',
    reason: `the target cannot be sent to; ${NO_RETRY}`,
  },
  {
    code: 'ssrf-blocked',
    class: 'client',
    meaning:
      "The SSRF guard refused the address the worker was about to connect to: loopback, private, link-local, CGNAT, multicast, cloud metadata or reserved, IPv4 or IPv6, checked on the resolved address of every connection (so DNS rebinding does not pass). The worker's `REDELIVER_ALLOW_ADDRESSES` opens ranges.",
    reason:
      "the target's address {address} is {description} ({range}); the SSRF guard refuses it and nothing was sent. If the endpoint is trusted, allow the range in REDELIVER_ALLOW_ADDRESSES",
  },
  {
    code: 'secret-not-bound',
    class: 'client',
    meaning:
      'The target names a secret of the worker (an MQTT credential) that is not bound to it: a secret goes only to the targets its configuration lists (docs/mqtt.md, "Credentials"), so that a producer cannot have it sent to a server of its own. Refused before connecting.',
    reason:
      "the worker's {secret} is not bound to {target}: a secret goes only to the targets its configuration lists, so nothing was sent. {hint}",
  },
  {
    code: 'secret-not-for-tenant',
    class: 'client',
    meaning:
      'The target names a secret of the worker (an MQTT credential, a signing secret) that is not for the delivery\'s tenant: a secret serves only the tenants its configuration lists in "tenants" (docs/mqtt.md, "Credentials"; docs/deliveries.md, "Signed requests"), so that one tenant cannot sign or publish as another. Refused before connecting.',
    reason:
      "the worker's {secret} is not for tenant {tenant}: a secret serves only the tenants its configuration lists, so nothing was sent. {hint}",
  },
];
