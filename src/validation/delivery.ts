import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { InvalidInputError, type Problem } from '../errors';
import { STABLE_CODE } from '../classify/classify';
import { resolvePolicy } from '../policy';
import { parseDuration } from '../policy/duration';
import type { BackoffPolicyInput } from '../policy/types';
import type { Delivery, DeliveryInput, HttpBatching, HttpBatchingInput, MessageKind, MqttTargetInput, Target } from '../delivery/types';
import { deliveryIdOf } from '../delivery/ids';
import type { Assignable } from './schema-types';
import { secretTenantProblems, type SecretTenantsLookup } from './secret-tenants';
import {
  contentTypeSchema,
  DELIVERY_HEADERS,
  headerProblems,
  idSchema,
  RESERVED_TENANT,
  RESERVED_TENANT_RULE,
  MAX_CA_BYTES,
  MAX_MESSAGE_ID_LENGTH,
  parseTargetUrl,
  storedSizeProblem,
} from './limits';

/** Payloads travel inside Temporal's history, whose blobs must stay well below its 2 MB limit. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
/**
 * The whole delivery as stored in its workflow's input (body JSON-escaped, target, headers, policy, …),
 * by default the payload limit and half again (384 KiB): room for a JSON body's escaped quotes and the
 * target, under Temporal's 512 KiB blob warning and far under its 2 MB limit, with the delivery stored
 * again in each attempt's activity input.
 */
export function defaultMaxDeliveryBytes(maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES): number {
  return Math.max(Math.ceil(maxPayloadBytes * 1.5), maxPayloadBytes + 64 * 1024);
}
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
const MAX_ATTEMPT_TIMEOUT_MS = 5 * 60_000;

/**
 * An opted-in endpoint's batched requests (target.batch, docs/batches.md). 100 messages' ids fit the
 * `message-ids` header (MAX_MESSAGE_IDS_HEADER_BYTES); 256 KiB, the largest single payload, sits under the
 * body limits endpoints commonly set (nginx's default 1 MiB). The upper bounds are a batch's own: it holds at
 * most 1,000 messages and 1 MiB of stored deliveries (MAX_BATCH_MESSAGES, MAX_BATCH_BYTES).
 */
export const BATCHING = {
  maxMessages: { default: 100, min: 2, max: 1_000 },
  maxBytes: { default: 256 * 1024, min: 1024, max: 4 * 1024 * 1024 },
} as const;

/** An error message that says "is required" when the field is missing. */
const want = (message: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : message);

const durationSchema = z.union([z.number(), z.string()], { error: 'must be milliseconds or a duration string such as "10s"' });
const verdictSchema = z.enum(['success', 'client', 'well-known', 'server', 'connection'], {
  error: 'must be one of success, client, well-known, server, connection',
});

/** A credential name: what a worker looks up (docs/mqtt.md, "Credentials"), never the secret itself. */
export const CREDENTIAL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The name of a secret the worker resolves (a `credential`, a `signing secret`): the secret itself never travels. */
const secretNameSchema = (what: string) =>
  z.string({ error: `must be a string (the name of a ${what} the worker resolves)` }).regex(CREDENTIAL_NAME, {
    error: `must be a ${what} name: letters, digits, "_", "." or "-", at most 64 (the worker resolves it; never put the secret here)`,
  });

/** A credential's name, on an MQTT target or a subscription's broker. */
export const credentialSchema = secretNameSchema('credential');
/** A signing secret's name, on an HTTP target (docs/deliveries.md, "Signed requests"). */
export const signingSchema = secretNameSchema('signing secret');

/** Eclipse Hono's MQTT topics, the default of each kind (its MQTT adapter's user guide). */
export const DEFAULT_MQTT_TOPICS: Record<MessageKind, string> = {
  telemetry: 'telemetry/{tenant}/{device}',
  event: 'event/{tenant}/{device}',
  'command-response': 'command///res/{requestId}/{status}',
};

const HTTP_FIELDS = ['method', 'headers', 'batch', 'signing'] as const;
const HTTP_USER_INFO = 'send credentials in target.headers (e.g. Authorization)';
const MQTT_USER_INFO = 'name a credential the worker resolves in target.credential (docs/mqtt.md, "Credentials")';
/**
 * Why a target (or subscription broker) naming a credential may not set its own CA or server name: they
 * would decide which server receives the credential (Node trusts `ca` instead of the system's roots).
 */
export const CREDENTIAL_TLS =
  'must not set ca or servername with a credential: the TLS trust for a credential is the worker\'s, in its binding ("brokers" entries { url, ca, servername }; docs/mqtt.md, "Credentials")';

/** An mqtts target's TLS settings (a subscription's broker's too). */
export const tlsSchema = z
  .object({
    ca: z
      .string({ error: 'must be a PEM certificate' })
      .includes('-----BEGIN CERTIFICATE-----', { error: 'must be a PEM certificate (-----BEGIN CERTIFICATE-----)' })
      .refine((ca) => Buffer.byteLength(ca) <= MAX_CA_BYTES, {
        error: (issue) => `is ${Buffer.byteLength(issue.input as string)} bytes, over the limit of ${MAX_CA_BYTES} bytes`,
      })
      .optional(),
    servername: z
      .string({ error: 'must be a string (the host name to verify)' })
      .regex(/^[A-Za-z0-9._-]{1,253}$/, { error: 'must be a host name: letters, digits, ".", "-" or "_", at most 253' })
      .optional(),
  })
  .strict();
const MQTT_FIELDS = ['topic', 'protocolVersion', 'credential', 'tls'] as const;

const boundedCount = ({ min, max }: { min: number; max: number }, what: string, belowMin = '') =>
  z
    .number({ error: `must be a whole number of ${what} from ${min} to ${max}` })
    .int({ error: `must be a whole number of ${what} from ${min} to ${max}` })
    .min(min, { error: `must be at least ${min}${belowMin}` })
    .max(max, { error: `must be at most ${max}` });

const batchingSchema = z
  .object(
    {
      format: z.enum(['json', 'ndjson'], { error: want('must be "json" (a JSON array) or "ndjson" (one message per line)') }),
      maxMessages: boundedCount(BATCHING.maxMessages, 'messages', ' (leave batch out to send one message per request)').optional(),
      maxBytes: boundedCount(BATCHING.maxBytes, 'bytes').optional(),
    },
    { error: 'must be an object { format, maxMessages?, maxBytes? }' },
  )
  .strict();

// one object for both kinds of target: which fields apply is checked against the URL's scheme below
const targetSchema = z
  .object({
    url: z.string({ error: want('must be a URL string') }),
    method: z.enum(['POST', 'PUT', 'PATCH'], { error: 'must be POST, PUT or PATCH' }).optional(),
    headers: z.record(z.string(), z.string({ error: 'header values must be strings' })).optional(),
    timeout: durationSchema.optional(),
    topic: z.string({ error: 'must be a string' }).optional(),
    protocolVersion: z.enum(['5', '3.1.1'], { error: 'must be "5" or "3.1.1"' }).optional(),
    credential: credentialSchema.optional(),
    tls: tlsSchema.optional(),
    batch: batchingSchema.optional(),
    signing: signingSchema.optional(),
  })
  .strict();

const inputSchema = z
  .object({
    messageId: idSchema('message id', MAX_MESSAGE_ID_LENGTH).optional(),
    kind: z.enum(['telemetry', 'event', 'command-response'], { error: want('must be one of telemetry, event, command-response') }),
    qos: z.union([z.literal(0), z.literal(1)], { error: 'must be 0 or 1' }).optional(),
    tenant: idSchema('tenant'),
    device: idSchema('device'),
    target: z.union([z.string(), targetSchema], {
      error: want(
        'must be a URL, { url, method?, headers?, timeout?, batch?, signing? } or { url, topic?, protocolVersion?, credential?, timeout?, tls? }',
      ),
    }),
    payload: z.unknown(),
    contentType: contentTypeSchema.optional(),
    command: z
      .object({
        requestId: idSchema('command request id'),
        status: z
          .number()
          .int()
          .min(200, { error: 'must be an HTTP-style status code 200-599' })
          .max(599, { error: 'must be an HTTP-style status code 200-599' })
          .optional(),
        deadline: z.union([z.string(), z.number(), z.date()]).optional(),
      })
      .strict()
      .optional(),
    policy: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
    orderingKey: idSchema('ordering key').optional(),
    overrides: z
      .record(
        z.string().regex(STABLE_CODE, {
          error: 'keys must be stable codes such as http-409, mqtt-0x97, net-ECONNRESET, timeout',
        }),
        verdictSchema,
      )
      .optional(),
  })
  .strict();

/** The shape of a delivery input (the HTTP API's OpenAPI document is made from it); validateDelivery checks the rest. */
export const deliveryInputSchema = inputSchema;
// what the schema lets through is a DeliveryInput; not the other way round: `policy` is any object here, for
// validatePolicy to name each wrong field of it
type _SchemaIsDeliveryInput = Assignable<z.output<typeof inputSchema>, DeliveryInput>;

export interface ValidateOptions {
  /** Epoch ms; default Date.now(). */
  now?: number;
  /** Largest accepted body in bytes. Default 256 KiB. */
  maxPayloadBytes?: number;
  /** Largest accepted delivery as stored in its workflow (body JSON-escaped, target, …). Default 1.5 × maxPayloadBytes (384 KiB). */
  maxDeliveryBytes?: number;
  /** Allowed URL schemes. Default http, https, mqtt and mqtts. */
  schemes?: string[];
  /**
   * The tenants of the worker's secrets, where this side can see them: a target naming a secret that is
   * not for the delivery's tenant is refused (`target.signing`, `target.credential`). Default: none here
   * (the worker checks before any socket); Redeliver's default: this process's environment.
   */
  secretTenants?: SecretTenantsLookup;
  /**
   * One of redeliver's own operational events, the only deliveries of the reserved tenant (docs/endpoint-health.md,
   * "Operational events").
   */
  operationalEvent?: boolean;
  /**
   * A missing `messageId`: `random`, a new UUID (a single submit: each call is a message of its own), or
   * `content`, derived from the message (contentMessageId: a set submitted again names the same messages, so
   * sends nothing again). Default `random`; `validateDeliveries`, what sets go through, defaults to `content`.
   */
  messageIds?: 'random' | 'content';
}

/**
 * Validates a submission and fills in every default; throws InvalidInputError naming each wrong field.
 * Nothing about a delivery is decided later: the workflow receives exactly what this returns.
 */
export function validateDelivery(raw: unknown, options: ValidateOptions = {}): Delivery {
  const now = options.now ?? Date.now();
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InvalidInputError([{ field: '(delivery)', message: 'must be an object' }], 'delivery');
  }
  const parsed = inputSchema.safeParse(raw);
  // report every problem at once: the checks below run on each field the schema found well-formed
  const problems: Problem[] = parsed.success ? [] : zodProblems(parsed.error);
  const bad = new Set(problems.map((p) => p.field.split('.')[0]));
  const input = (parsed.success ? parsed.data : raw) as DeliveryInput;
  const kind = bad.has('kind') ? undefined : input.kind;
  if (!bad.has('tenant') && input.tenant === RESERVED_TENANT && !options.operationalEvent)
    problems.push({ field: 'tenant', message: RESERVED_TENANT_RULE });

  if (input.qos !== undefined && kind !== undefined && kind !== 'telemetry' && !bad.has('qos')) {
    problems.push({ field: 'qos', message: `applies to telemetry only (${input.kind} is always delivered at least once)` });
  }
  const qos = input.kind === 'telemetry' && !bad.has('qos') ? (input.qos ?? 1) : 1;

  const rawTarget = bad.has('target') ? { url: '' } : typeof input.target === 'string' ? { url: input.target } : input.target;
  const targetField = typeof input.target === 'string' ? 'target' : 'target.url';
  // placeholders let one URL template serve many deliveries (Hono: /command/res/{tenant}/{device}/{requestId})
  const target = { ...rawTarget, url: expandUrl(rawTarget.url, input, bad, targetField, problems) } as {
    url: string;
    method?: 'POST' | 'PUT' | 'PATCH';
    headers?: Record<string, string>;
    timeout?: number | string;
    batch?: HttpBatchingInput;
    signing?: string;
  } & Omit<MqttTargetInput, 'url' | 'timeout'>;
  const schemes = options.schemes ?? ['http', 'https', 'mqtt', 'mqtts'];
  const { url, mqttTopic } = bad.has('target') ? {} : checkTarget(target, input, kind, { field: targetField, schemes, bad }, problems);
  if (!bad.has('target') && !bad.has('tenant')) {
    problems.push(...secretTenantProblems(options.secretTenants, 'signing', target.signing, input.tenant, 'target.signing'));
    problems.push(...secretTenantProblems(options.secretTenants, 'credential', target.credential, input.tenant, 'target.credential'));
  }
  let timeout = DEFAULT_ATTEMPT_TIMEOUT_MS;
  if (target.timeout !== undefined && !bad.has('target')) {
    const t = parseDuration(target.timeout);
    if (t === undefined || t <= 0 || t > MAX_ATTEMPT_TIMEOUT_MS) {
      problems.push({
        field: 'target.timeout',
        message: `must be a duration above 0 and at most 5m, got ${JSON.stringify(target.timeout)}`,
      });
    } else timeout = t;
  }

  if (kind === 'command-response' && !input.command && !bad.has('command')) {
    problems.push({ field: 'command', message: 'is required for a command response ({ requestId, status?, deadline? })' });
  }
  if (kind !== undefined && kind !== 'command-response' && input.command && !bad.has('command')) {
    problems.push({ field: 'command', message: 'applies to command responses only' });
  }
  const policyInput = { ...(bad.has('policy') ? {} : (input.policy ?? {})) } as BackoffPolicyInput;
  if (!bad.has('command') && input.command?.deadline !== undefined) {
    if (policyInput.deadline !== undefined)
      problems.push({ field: 'policy.deadline', message: 'give the deadline once: command.deadline or policy.deadline' });
    else policyInput.deadline = input.command.deadline;
  }
  // with an unknown kind, the policy is still checked on its own terms (as for an event)
  const policyContext = { kind: kind ?? 'event', qos, now } as const;
  const resolved = resolvePolicy(policyInput, policyContext);
  for (const p of resolved.problems) {
    const field = p.field === 'deadline' && input.command?.deadline !== undefined ? 'command.deadline' : `policy.${p.field}`;
    problems.push({ field, message: p.message });
  }

  if (input.payload === undefined && !bad.has('payload')) problems.push({ field: 'payload', message: 'is required' });
  const body = bodyOf(input.payload, problems);
  const bytes = Buffer.byteLength(body, 'utf8');
  const maxBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (bytes > maxBytes) problems.push({ field: 'payload', message: `is ${bytes} bytes, over the limit of ${maxBytes} bytes` });

  if (problems.length > 0 || !url || !kind) throw new InvalidInputError(problems, 'delivery');

  const validTarget: Target =
    mqttTopic === undefined
      ? {
          url: url.toString(),
          method: target.method ?? 'POST',
          headers: target.headers ?? {},
          timeout,
          ...batchingOf(target.batch),
          ...(target.signing !== undefined && { signing: target.signing }),
        }
      : {
          transport: 'mqtt',
          // the broker alone: path, query and credentials were refused above
          url: `${url.protocol}//${url.host}`,
          topic: mqttTopic,
          protocolVersion: target.protocolVersion ?? '5',
          credential: target.credential ?? null,
          timeout,
          tls: target.tls ?? null,
        };
  // the ids first, filled in below: the key order is part of a delivery's fingerprint (a resubmit's check)
  const delivery: Delivery = {
    deliveryId: '',
    messageId: '',
    kind,
    qos,
    tenant: input.tenant,
    device: input.device,
    endpoint: url.host,
    target: validTarget,
    body,
    contentType: input.contentType ?? (typeof input.payload === 'string' ? 'text/plain; charset=utf-8' : 'application/json'),
    command: input.command ? { requestId: input.command.requestId, status: input.command.status ?? 200 } : null,
    policy: resolved.policy,
    overrides: input.overrides ?? {},
    submittedAt: now,
    ...(input.orderingKey !== undefined && { orderingKey: input.orderingKey }),
  };
  delivery.messageId = input.messageId ?? (options.messageIds === 'content' ? contentMessageId(delivery) : randomUUID());
  delivery.deliveryId = deliveryIdOf(input.tenant, input.device, delivery.messageId);
  // measured on the delivery itself, as its workflow will store it: so only once everything else is right
  const tooBig = storedSizeProblem({ ...delivery }, options.maxDeliveryBytes ?? defaultMaxDeliveryBytes(maxBytes));
  if (tooBig) throw new InvalidInputError([tooBig], 'delivery');
  return delivery;
}

/**
 * The message id of a message submitted in a set without one: a hash of everything that makes it the message
 * it is (tenant, device, kind, qos, target, body, content type, command, policy, overrides, ordering key) and
 * nothing else (not the submit time, not its place in the set). The same message submitted again, in this set
 * or a later one, has the same id, hence the same delivery: sent once. The price: two identical messages meant
 * to be sent twice (the same reading at two times) are one; those need message ids of their own.
 */
export function contentMessageId(delivery: Delivery): string {
  const { deliveryId: _deliveryId, messageId: _messageId, submittedAt: _submittedAt, ...content } = delivery;
  return `content-${createHash('sha256').update(JSON.stringify(content)).digest('base64url').slice(0, 32)}`;
}

/** An opted-in target's batching, defaults filled in; nothing at all when it did not opt in (HttpTarget.batch). */
function batchingOf(input: HttpBatchingInput | undefined): { batch?: HttpBatching } {
  if (!input) return {};
  const { maxMessages, maxBytes } = BATCHING;
  return {
    batch: {
      format: input.format,
      maxMessages: input.maxMessages ?? maxMessages.default,
      maxBytes: input.maxBytes ?? maxBytes.default,
    },
  };
}

/** The body as sent: a string as is, anything else as JSON (refused, naming the payload, when it has none). */
function bodyOf(payload: unknown, problems: Problem[]): string {
  if (typeof payload === 'string') return payload;
  try {
    const json = JSON.stringify(payload ?? null) as string | undefined;
    if (json !== undefined) return json;
    problems.push({ field: 'payload', message: `must be a string or a JSON value, got a ${typeof payload}` });
  } catch (err) {
    problems.push({ field: 'payload', message: `cannot be sent as JSON: ${(err as Error).message}` });
  }
  return '';
}

type TargetFields = { url: string; method?: unknown; headers?: Record<string, string>; batch?: unknown; signing?: unknown } & Omit<
  MqttTargetInput,
  'url' | 'timeout'
>;

/**
 * Checks the target's URL and the fields that go with its scheme; returns the URL (undefined when it
 * cannot be used) and, for MQTT, the topic with its placeholders filled in.
 */
function checkTarget(
  target: TargetFields,
  input: DeliveryInput,
  kind: MessageKind | undefined,
  at: { field: string; schemes: string[]; bad: Set<string | undefined> },
  problems: Problem[],
): { url?: URL; mqttTopic?: string } {
  const mqtt = /^\s*mqtts?:/i.test(target.url);
  const { url, problems: urlProblems } = parseTargetUrl(target.url, at.schemes, mqtt ? MQTT_USER_INFO : HTTP_USER_INFO);
  problems.push(...urlProblems.map((message) => ({ field: at.field, message })));
  if (!url) return {};
  if (mqtt) return { url, mqttTopic: mqttTargetProblems(url, target, input, kind, at, problems) };
  for (const field of MQTT_FIELDS) {
    if (target[field] !== undefined) problems.push({ field: `target.${field}`, message: 'applies to mqtt:// and mqtts:// targets only' });
  }
  if (target.headers) problems.push(...headerProblems(target.headers, 'target.headers', DELIVERY_HEADERS));
  return { url };
}

const PLACEHOLDERS: Record<string, (i: DeliveryInput) => string | undefined> = {
  tenant: (i) => i.tenant,
  device: (i) => i.device,
  requestId: (i) => i.command?.requestId,
  status: (i) => (i.command ? String(i.command.status ?? 200) : undefined),
};

/**
 * What a broker URL (a delivery's MQTT target, a subscription's broker) may not have: a path, query or
 * fragment; TLS settings on mqtt://; with a credential, TLS trust of the producer's own (CREDENTIAL_TLS).
 */
export function brokerProblems(
  url: URL,
  broker: { tls?: { ca?: string; servername?: string } | undefined; credential?: string | null | undefined },
  fields: { url: string; tls: string; alone: string; what: string },
  problems: Problem[],
): void {
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) {
    problems.push({ field: fields.url, message: `must be the broker alone (mqtt://host:port)${fields.alone}` });
  }
  if (broker.tls !== undefined && url.protocol !== 'mqtts:')
    problems.push({ field: fields.tls, message: `applies to mqtts:// ${fields.what} only` });
  else if (broker.credential !== undefined && (broker.tls?.ca !== undefined || broker.tls?.servername !== undefined))
    problems.push({ field: fields.tls, message: CREDENTIAL_TLS });
}

/**
 * Checks what an mqtt(s) target must and must not have; returns its topic, placeholders filled in
 * (undefined when the topic itself is wrong: the problem is then recorded).
 */
function mqttTargetProblems(
  url: URL,
  target: TargetFields,
  input: DeliveryInput,
  kind: MessageKind | undefined,
  { field: urlField, bad }: { field: string; bad: Set<string | undefined> },
  problems: Problem[],
): string | undefined {
  for (const field of HTTP_FIELDS) {
    if (target[field] !== undefined) problems.push({ field: `target.${field}`, message: 'applies to http:// and https:// targets only' });
  }
  // the URL's checks (host, user info) are made by parseTargetUrl
  brokerProblems(
    url,
    target,
    { url: urlField, tls: 'target.tls', alone: ', without a path, query or fragment; give the topic in target.topic', what: 'targets' },
    problems,
  );

  const field = target.topic === undefined ? 'target' : 'target.topic';
  const template = target.topic ?? (kind ? DEFAULT_MQTT_TOPICS[kind] : undefined);
  // the topic is made from these fields: with one of them wrong, there is nothing more to say about it
  if (template === undefined || ['tenant', 'device', 'command'].some((f) => bad.has(f))) return undefined;
  const topic = template.replace(/\{(tenant|device|requestId|status)\}/g, (whole, key: string) => PLACEHOLDERS[key]?.(input) ?? whole);
  const left = topic.match(/\{(requestId|status)\}/g);
  const before = problems.length;
  if (left)
    problems.push({ field, message: `uses ${[...new Set(left)].join(' and ')}, which only a command response (with its command) has` });
  if (topic === '') problems.push({ field, message: 'must not be empty' });
  if (/[+#]/.test(topic))
    problems.push({ field, message: 'must not contain the wildcards "+" or "#": a message is published to one topic' });
  if (topic.includes('\u0000')) problems.push({ field, message: 'must not contain the NUL character' });
  if (Buffer.byteLength(topic, 'utf8') > 65_535) problems.push({ field, message: 'is longer than the 65,535 bytes MQTT allows' });
  return problems.length === before ? topic : undefined;
}

/** Where each placeholder's value comes from: a field found wrong fills nothing in. */
const PLACEHOLDER_FIELDS: Record<string, string> = { tenant: 'tenant', device: 'device', requestId: 'command', status: 'command' };

/**
 * The URL with its placeholders filled in, each value percent-encoded. A path segment that a value makes `.` or
 * `..` is refused: URL parsers resolve it (`%2E` too), and the request would leave the template's path
 * (`/ingest/{tenant}/{device}` with tenant and device `..` is `/`).
 */
function expandUrl(url: string, input: DeliveryInput, bad: Set<string | undefined>, field: string, problems: Problem[]): string {
  const fill = (text: string) =>
    text.replace(/\{(tenant|device|requestId|status)\}/g, (whole, key: string) => {
      const value = bad.has(PLACEHOLDER_FIELDS[key]) ? undefined : PLACEHOLDERS[key]?.(input);
      return value === undefined ? whole : encodeURIComponent(value);
    });
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  const dots: string[] = [];
  const segments = path.split('/').map((segment) => {
    const filled = fill(segment);
    if (filled !== segment && /^(\.|%2e){1,2}$/i.test(filled)) dots.push(`${JSON.stringify(segment)} into ${JSON.stringify(filled)}`);
    return filled;
  });
  if (dots.length)
    problems.push({
      field,
      message: `turns the path segment ${dots.join(', and ')}: a dot segment would send the request outside the URL's path`,
    });
  return segments.join('/') + (end === -1 ? '' : fill(url.slice(end)));
}

/** zod's issues as problems that name their fields (`what` when the whole input is wrong). */
/**
 * Validates many submissions at once; throws one InvalidInputError naming every wrong field as `[i].field`,
 * so a bulk submit starts nothing when any input is bad.
 */
export function validateDeliveries(inputs: readonly unknown[], options: ValidateOptions = {}): Delivery[] {
  const problems: Problem[] = [];
  const deliveries: Delivery[] = [];
  // a set's messages without an id get one from their contents: the same set again is the same messages
  const each: ValidateOptions = { ...options, messageIds: options.messageIds ?? 'content' };
  for (const [i, input] of inputs.entries()) {
    try {
      deliveries.push(validateDelivery(input, each));
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
      problems.push(...err.problems.map((p) => ({ field: `[${i}].${p.field}`, message: p.message })));
    }
  }
  if (problems.length) throw new InvalidInputError(problems, 'deliveries');
  return deliveries;
}

export function zodProblems(error: { issues: readonly z.core.$ZodIssue[] }, what = '(delivery)', prefix: PropertyKey[] = []): Problem[] {
  const problems: Problem[] = [];
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path];
    const field = path.map(String).join('.');
    if (issue.code === 'invalid_union') {
      // an object where a URL or an object is wanted: name the object's own wrong fields
      const branch = issue.errors.find((b) => b.some((i) => i.path.length > 0 || i.code === 'unrecognized_keys'));
      if (branch) {
        problems.push(...zodProblems({ issues: branch }, what, path));
        continue;
      }
    }
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push({ field: field ? `${field}.${key}` : key, message: 'is not a known field' });
    } else if (issue.code === 'invalid_key') {
      problems.push({ field, message: issue.issues[0]?.message ?? issue.message });
    } else {
      problems.push({ field: field || what, message: issue.message });
    }
  }
  return problems;
}
