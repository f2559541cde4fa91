import { CREDENTIAL_NAME, DEFAULT_MQTT_TOPICS, deliveryInputSchema } from '../validation/delivery';
import {
  COMMAND_HEADERS,
  DELIVERY_HEADERS,
  FIELD_VALUE,
  MAX_HEADERS,
  MAX_URL_BYTES,
  REFUSED_HEADER_NAMES,
  RESERVED_TENANT,
  TOKEN,
} from '../validation/limits';
import { subscriptionInputSchema } from '../validation/subscription';
import { JITTERS } from '../policy/types';
import { MAX_POLICY_DURATION_MS } from '../policy/validate';
import { ENDPOINT_LIMITS } from '../endpoints/controls';
import { deliveryInput, endpointParams, endpointSettingsBody } from './schemas';

// What the validation code checks beyond a field's shape (a URL's scheme and host, a duration's range, which fields go
// with which kind), said again in JSON Schema for the API's document, where JSON Schema can say it: so that a client
// or a fuzzer (schemathesis) that reads the document makes requests the API accepts. What JSON Schema cannot say (a
// header name refused in any case, a topic's placeholders, a date in the past) is in the descriptions. The code stays
// the one that decides; test/unit/document-rules.test.ts holds the two to the same verdicts.

export type JsonSchema = Record<string, unknown>;

const regex = (source: RegExp) => source.source;

// a host as the URL parser takes it: a DNS name whose last label is no number, an IPv4 address, or an IPv6 one in brackets
const LABEL = '[A-Za-z0-9_-]{1,63}';
const DNS_NAME = `(${LABEL}\\.)*[A-Za-z_][A-Za-z0-9_-]{0,62}\\.?`;
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;
const IPV6 = '\\[[0-9A-Fa-f:.]{2,45}\\]';
const HOST = `(${DNS_NAME}|${IPV4}|${IPV6})`;
const PORT = '(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?';
// no control characters, no spaces (percent-encode them); `{tenant}`, `{device}`, `{requestId}`, `{status}` are filled in
const REST = '[^\\x00-\\x20\\x7f]*';

/** An http(s) URL: a host, a port, a path, a query; no user name or password (credentials go in the headers). */
export const HTTP_URL: JsonSchema = {
  type: 'string',
  maxLength: MAX_URL_BYTES,
  pattern: `^https?://${HOST}${PORT}([/?#]${REST})?$`,
  description: `http:// or https://, at most ${MAX_URL_BYTES} bytes; no user info; path placeholders {tenant}, {device}, {requestId}, {status}`,
};

/** An endpoint as a path names it: host[:port], or a URL of it (the host of which is the endpoint). */
export const ENDPOINT_NAME: JsonSchema = {
  type: 'string',
  maxLength: 300,
  pattern: `^(${HOST}${PORT}|https?://${HOST}${PORT}([/?#]${REST})?|mqtts?://${HOST}${PORT}/?)$`,
};

/** A broker: mqtt(s)://host[:port], no path, query or fragment. */
export const BROKER_URL: JsonSchema = {
  type: 'string',
  maxLength: MAX_URL_BYTES,
  pattern: `^mqtts?://${HOST}${PORT}/?$`,
  description: 'the broker alone, mqtt:// or mqtts://host[:port]; no user info (name a credential instead)',
};

/**
 * The string forms of a duration in a range, as patterns of whole numbers and units (`ms`, `s`, `m`, `h`, `d`) that
 * cannot leave it: a generator that follows the pattern makes a duration the API takes. The API reads every form the
 * `ms` package reads (`1.5h`, `2 days`) within the same range; the description says so.
 */
const DURATION_TEXT = {
  /** above 0, at most 10 years (999 of any unit up to days) */
  policy: '^[1-9][0-9]{0,2}(ms|s|m|h|d)$',
  /** above 0, at most 5 min */
  timeout: '^([1-9][0-9]{0,3}ms|[1-9][0-9]?s|[1-5]m)$',
  /** 100 ms to 1 h */
  probe: '^([1-9][0-9]{2,5}ms|[1-9][0-9]{0,2}s|([1-9]|[1-5][0-9])m|1h)$',
  /** 1 min to 90 days */
  autoDisable: '^([1-9][0-9]{0,4}m|[1-9][0-9]{0,2}h|([1-9]|[1-8][0-9]|90)d)$',
  /** above 0 */
  positive: '^[1-9][0-9]{0,5}(ms|s|m|h|d)$',
} as const;

/** Milliseconds from `min` (or above 0) to `max`, or a duration string (`text`, its forms in that range). */
function duration(range: { above?: number; min?: number; max: number }, text: keyof typeof DURATION_TEXT, what: string): JsonSchema {
  const bounds = range.above !== undefined ? { exclusiveMinimum: range.above } : { minimum: range.min ?? 0 };
  return {
    anyOf: [
      { type: 'number', ...bounds, maximum: range.max },
      { type: 'string', pattern: DURATION_TEXT[text] },
    ],
    description: `${what}; as a string also any other duration the \`ms\` package reads (\`1.5h\`, \`2 days\`) in that range`,
  };
}
const nullable = (schema: JsonSchema): JsonSchema => ({ ...schema, anyOf: [...(schema.anyOf as JsonSchema[]), { type: 'null' }] });

/** Headers of a target or callback: RFC 9110 names and values, none of those redeliver sets or the HTTP client owns. */
function headers(owned: readonly string[]): JsonSchema {
  const refused = [...REFUSED_HEADER_NAMES, ...owned];
  return {
    type: 'object',
    maxProperties: MAX_HEADERS,
    propertyNames: { type: 'string', pattern: regex(TOKEN), not: { enum: refused } },
    additionalProperties: { type: 'string', pattern: regex(FIELD_VALUE) },
    description: `header name → value; refused in any case: ${refused.join(', ')}; names given once (case-insensitive), 8 KiB in all`,
  };
}

const ATTEMPT_TIMEOUT = duration(
  { above: 0, max: 300_000 },
  'timeout',
  'an attempt\'s timeout: ms, or a duration such as "10s"; at most 5 min',
);
const credential = { type: 'string', pattern: regex(CREDENTIAL_NAME) };
const tls = (deliveries: string): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  properties: {
    ca: { type: 'string', pattern: '-----BEGIN CERTIFICATE-----', maxLength: 64 * 1024 },
    servername: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,253}$' },
  },
  description: `mqtts:// ${deliveries} only, and not with a credential (whose TLS trust is the worker's)`,
});

/** A backoff policy (docs/backoff.md): each field bounded; min and initial at most max. */
export const POLICY: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    jitter: { enum: [...JITTERS] },
    initial: duration({ above: 0, max: MAX_POLICY_DURATION_MS }, 'policy', 'the first window, at most max'),
    multiplier: { type: 'number', minimum: 1 },
    min: duration({ min: 0, max: MAX_POLICY_DURATION_MS }, 'policy', 'the floor after jitter, at most max'),
    max: duration({ above: 0, max: MAX_POLICY_DURATION_MS }, 'policy', "the window's cap"),
    maxAttempts: { type: 'integer', minimum: 0, description: '0: unlimited; telemetry QoS 0: 1' },
    maxAge: nullable(duration({ above: 0, max: MAX_POLICY_DURATION_MS }, 'policy', 'null: no age bound')),
    deadline: {
      anyOf: [{ type: 'string', format: 'date-time' }, { type: 'number' }, { type: 'null' }],
      description: 'a time in the future: ISO 8601 or epoch ms',
    },
  },
};

const HTTP_TARGET: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: HTTP_URL,
    method: { enum: ['POST', 'PUT', 'PATCH'] },
    headers: headers(DELIVERY_HEADERS),
    timeout: ATTEMPT_TIMEOUT,
    batch: {
      type: 'object',
      additionalProperties: false,
      required: ['format'],
      properties: {
        format: { enum: ['json', 'ndjson'] },
        maxMessages: { type: 'integer', minimum: 2, maximum: 1000 },
        maxBytes: { type: 'integer', minimum: 1024, maximum: 4 * 1024 * 1024 },
      },
    },
    signing: { ...credential, description: "the name of a signing secret of the delivery's tenant, bound on the worker" },
  },
};

/** A broker as an object (an MQTT target, a subscription's broker): its URL, its connection's fields, and `fields`. */
const brokerObject = (what: string, fields: Record<string, JsonSchema>): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: BROKER_URL,
    protocolVersion: { enum: ['5', '3.1.1'] },
    credential: { ...credential, description: "the name of an MQTT credential of the tenant's, bound on the worker" },
    timeout: ATTEMPT_TIMEOUT,
    tls: tls(what),
    ...fields,
  },
});

const MQTT_TARGET: JsonSchema = brokerObject('targets', {
  topic: {
    type: 'string',
    minLength: 1,
    pattern: '^[^+#\\x00]*$',
    description: `no wildcards; placeholders {tenant}, {device}, and for command responses {requestId}, {status}; default per kind: ${Object.values(DEFAULT_MQTT_TOPICS).join(', ')}`,
  },
});

/** Where a delivery goes: a URL, or an HTTP or MQTT target object. */
export const DELIVERY_TARGET: JsonSchema = { anyOf: [HTTP_URL, BROKER_URL, HTTP_TARGET, MQTT_TARGET] };

/** A field that must be left out: no value fits (JSON Schema's `false`, in the form every OpenAPI tool reads). */
const ABSENT: JsonSchema = { not: {} };

/** Which fields go with which kind: `qos` with telemetry, `command` with (and only with) a command response. */
export const DELIVERY_KINDS: JsonSchema = {
  if: { properties: { kind: { const: 'telemetry' } } },
  then: { properties: { command: ABSENT } },
  else: {
    properties: { qos: ABSENT },
    if: { properties: { kind: { const: 'command-response' } } },
    then: { required: ['command'] },
    else: { properties: { command: ABSENT } },
  },
};

const NOT_RESERVED = { not: { const: RESERVED_TENANT } };

const SUBSCRIPTION_BROKER: JsonSchema = {
  anyOf: [
    BROKER_URL,
    brokerObject('brokers', {
      topic: {
        type: 'string',
        minLength: 1,
        pattern: '^[^\\x00]*$',
        description: 'a topic filter: "+" a whole level, "#" only the whole last one; {tenant} and {device} filled in',
      },
      clientId: {
        type: 'string',
        maxLength: 256,
        pattern: '^[\\x21-\\x2a\\x2c-\\x7e]*/[\\x21-\\x22\\x24-\\x2a\\x2c-\\x7e]+$',
        description: '"<tenant>/" and a name of your own: the broker session it names is the tenant\'s alone',
      },
    }),
  ],
};

const CALLBACK: JsonSchema = {
  anyOf: [
    HTTP_URL,
    {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: { url: HTTP_URL, headers: headers(COMMAND_HEADERS), timeout: ATTEMPT_TIMEOUT },
    },
  ],
};

const settings = endpointSettingsBody.shape;
const { maxInFlight, rate } = ENDPOINT_LIMITS;

/**
 * The refinements by the zod schema they describe: the document's JSON Schema for that schema is replaced by this one
 * (its description kept), wherever the schema appears.
 */
export const DOCUMENT_RULES = new Map<unknown, JsonSchema>([
  [endpointParams.shape.endpoint, ENDPOINT_NAME],
  [deliveryInputSchema.shape.target, DELIVERY_TARGET],
  [deliveryInputSchema.shape.policy.unwrap(), POLICY],
  [subscriptionInputSchema.shape.broker, SUBSCRIPTION_BROKER],
  [subscriptionInputSchema.shape.callback, CALLBACK],
  [subscriptionInputSchema.shape.policy.unwrap(), POLICY],
  [subscriptionInputSchema.shape.response.unwrap().shape.target.unwrap(), DELIVERY_TARGET],
  [subscriptionInputSchema.shape.response.unwrap().shape.policy.unwrap(), POLICY],
  [subscriptionInputSchema.shape.commandMaxAge.unwrap(), duration({ above: 0, max: Number.MAX_SAFE_INTEGER }, 'positive', 'above 0')],
  [subscriptionInputSchema.shape.downtimeThreshold.unwrap(), duration({ above: 0, max: Number.MAX_SAFE_INTEGER }, 'positive', 'above 0')],
  [
    settings.maxInFlight.unwrap(),
    { anyOf: [{ type: 'integer', minimum: maxInFlight.min, maximum: maxInFlight.max }, { const: 'off' }, { type: 'null' }] },
  ],
  [
    settings.rate.unwrap(),
    {
      anyOf: [
        { type: 'number', minimum: rate.min, maximum: rate.max },
        // a whole number of attempts (1 to 999,999) per second, minute or hour; decimals and spaces are read too
        { type: 'string', pattern: '^[1-9][0-9]{0,5}(/(s|sec|second|m|min|minute|h|hour))?$' },
        { const: 'off' },
        { type: 'null' },
      ],
    },
  ],
  [settings.probeEvery.unwrap(), nullable(duration({ min: 100, max: 3_600_000 }, 'probe', 'from 100 ms to 1 h'))],
  [
    settings.autoDisableAfter.unwrap(),
    {
      anyOf: [
        ...(duration({ min: 60_000, max: 90 * 86_400_000 }, 'autoDisable', 'from 1 min to 90 days').anyOf as JsonSchema[]),
        { const: 'off' },
        { type: 'null' },
      ],
    },
  ],
]);

/** Rules that hold between a schema's fields: added to what the document says of it. */
export const DOCUMENT_CROSS_RULES = new Map<unknown, JsonSchema>([
  [deliveryInput, DELIVERY_KINDS],
  [deliveryInputSchema.shape.tenant, NOT_RESERVED],
  [subscriptionInputSchema.shape.tenant, NOT_RESERVED],
  [endpointSettingsBody, { minProperties: 1 }],
]);
