import { randomUUID } from 'node:crypto';
import ms from 'ms';
import { z } from 'zod';
import { InvalidInputError, type Problem } from '../errors';
import { STABLE_CODE } from '../classify/classify';
import { policyProblems, validatePolicy } from '../policy';
import type { BackoffPolicyInput } from '../policy/types';
import type { Delivery, DeliveryInput, MessageKind, MqttTargetInput, Target } from './types';
import { deliveryIdOf } from './ids';

/** Payloads travel inside Temporal's history, whose blobs must stay well below its 2 MB limit. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
const MAX_ATTEMPT_TIMEOUT_MS = 5 * 60_000;

// Ids end up in workflow ids, HTTP headers and MQTT topics: no whitespace, no topic separators or wildcards.
const name = (what: string) =>
  z
    .string({ error: want(`must be a string (the ${what})`) })
    .min(1, { error: 'must not be empty' })
    .max(256, { error: 'must be at most 256 characters' })
    .regex(/^[^\s/+#]*$/, { error: 'must not contain whitespace, "/", "+" or "#"' });

/** An error message that says "is required" when the field is missing. */
const want = (message: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : message);

const durationSchema = z.union([z.number(), z.string()], { error: 'must be milliseconds or a duration string such as "10s"' });
const verdictSchema = z.enum(['success', 'client', 'well-known', 'server', 'connection'], {
  error: 'must be one of success, client, well-known, server, connection',
});

/** A credential name: what a worker looks up (README, "MQTT credentials"), never the secret itself. */
export const CREDENTIAL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Eclipse Hono's MQTT topics, the default of each kind (its MQTT adapter's user guide). */
export const DEFAULT_MQTT_TOPICS: Record<MessageKind, string> = {
  telemetry: 'telemetry/{tenant}/{device}',
  event: 'event/{tenant}/{device}',
  'command-response': 'command///res/{requestId}/{status}',
};

const HTTP_FIELDS = ['method', 'headers'] as const;
const MQTT_FIELDS = ['topic', 'protocolVersion', 'credential', 'tls'] as const;

// one object for both kinds of target: which fields apply is checked against the URL's scheme below
const targetSchema = z
  .object({
    url: z.string({ error: want('must be a URL string') }),
    method: z.enum(['POST', 'PUT', 'PATCH'], { error: 'must be POST, PUT or PATCH' }).optional(),
    headers: z.record(z.string(), z.string({ error: 'header values must be strings' })).optional(),
    timeout: durationSchema.optional(),
    topic: z.string({ error: 'must be a string' }).optional(),
    protocolVersion: z.enum(['5', '3.1.1'], { error: 'must be "5" or "3.1.1"' }).optional(),
    credential: z
      .string({ error: 'must be a string (the name of a credential the worker resolves)' })
      .regex(CREDENTIAL_NAME, { error: 'must be a credential name: letters, digits, "_", "." or "-", at most 64 (the worker resolves it; never put the secret here)' })
      .optional(),
    tls: z
      .object({
        ca: z.string({ error: 'must be a PEM certificate' }).includes('-----BEGIN CERTIFICATE-----', { error: 'must be a PEM certificate (-----BEGIN CERTIFICATE-----)' }).optional(),
        servername: z.string().min(1, { error: 'must not be empty' }).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

const inputSchema = z
  .object({
    messageId: name('message id').optional(),
    kind: z.enum(['telemetry', 'event', 'command-response'], { error: want('must be one of telemetry, event, command-response') }),
    qos: z.union([z.literal(0), z.literal(1)], { error: 'must be 0 or 1' }).optional(),
    tenant: name('tenant'),
    device: name('device'),
    target: z.union([z.string(), targetSchema], { error: want('must be a URL, { url, method?, headers?, timeout? } or { url, topic?, protocolVersion?, credential?, timeout?, tls? }') }),
    payload: z.unknown(),
    contentType: z.string().min(1, { error: 'must not be empty' }).optional(),
    command: z
      .object({
        requestId: name('command request id'),
        status: z.number().int().min(200, { error: 'must be an HTTP-style status code 200-599' }).max(599, { error: 'must be an HTTP-style status code 200-599' }).optional(),
        deadline: z.union([z.string(), z.number(), z.date()]).optional(),
      })
      .strict()
      .optional(),
    policy: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
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

export interface ValidateOptions {
  /** Epoch ms; default Date.now(). */
  now?: number;
  /** Largest accepted body in bytes. Default 256 KiB. */
  maxPayloadBytes?: number;
  /** Allowed URL schemes. Default http, https, mqtt and mqtts. */
  schemes?: string[];
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

  if (input.qos !== undefined && kind !== undefined && kind !== 'telemetry' && !bad.has('qos')) {
    problems.push({ field: 'qos', message: `applies to telemetry only (${input.kind} is always delivered at least once)` });
  }
  const qos = input.kind === 'telemetry' && !bad.has('qos') ? (input.qos ?? 1) : 1;

  const rawTarget = bad.has('target') ? { url: '' } : typeof input.target === 'string' ? { url: input.target } : input.target;
  // placeholders let one URL template serve many deliveries (Hono: /command/res/{tenant}/{device}/{requestId})
  const target = { ...rawTarget, url: expandUrl(rawTarget.url, input) } as { url: string; method?: 'POST' | 'PUT' | 'PATCH'; headers?: Record<string, string>; timeout?: number | string } & Omit<MqttTargetInput, 'url' | 'timeout'>;
  const schemes = options.schemes ?? ['http', 'https', 'mqtt', 'mqtts'];
  const targetField = typeof input.target === 'string' ? 'target' : 'target.url';
  let url: URL | undefined;
  let mqttTopic: string | undefined;
  if (!bad.has('target')) try {
    url = new URL(target.url);
    const scheme = url.protocol.replace(/:$/, '');
    if (!schemes.includes(scheme)) {
      problems.push({ field: targetField, message: `scheme "${scheme}" is not supported; use ${schemes.join(' or ')}` });
    }
    if (scheme === 'mqtt' || scheme === 'mqtts') {
      const kindForTopic = kind ?? (bad.has('kind') ? undefined : input.kind);
      mqttTopic = mqttTargetProblems(url, target, input, kindForTopic, targetField, bad, problems);
    } else {
      for (const field of MQTT_FIELDS) {
        if (target[field] !== undefined) problems.push({ field: `target.${field}`, message: 'applies to mqtt:// and mqtts:// targets only' });
      }
    }
  } catch {
    problems.push({ field: targetField, message: `is not a valid URL: ${JSON.stringify(target.url)}` });
  }
  let timeout = DEFAULT_ATTEMPT_TIMEOUT_MS;
  if (target.timeout !== undefined && !bad.has('target')) {
    const t = typeof target.timeout === 'number' ? target.timeout : ms(target.timeout as Parameters<typeof ms>[0]);
    if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0 || t > MAX_ATTEMPT_TIMEOUT_MS) {
      problems.push({ field: 'target.timeout', message: `must be a duration above 0 and at most 5m, got ${JSON.stringify(target.timeout)}` });
    } else timeout = t;
  }

  if (kind === 'command-response' && !input.command && !bad.has('command')) {
    problems.push({ field: 'command', message: 'is required for a command response ({ requestId, status?, deadline? })' });
  }
  if (kind !== undefined && kind !== 'command-response' && input.command && !bad.has('command')) {
    problems.push({ field: 'command', message: 'applies to command responses only' });
  }
  const policyInput = { ...(bad.has('policy') ? {} : input.policy ?? {}) } as BackoffPolicyInput;
  if (!bad.has('command') && input.command?.deadline !== undefined) {
    if (policyInput.deadline !== undefined) problems.push({ field: 'policy.deadline', message: 'give the deadline once: command.deadline or policy.deadline' });
    else policyInput.deadline = input.command.deadline;
  }
  // with an unknown kind, the policy is still checked on its own terms (as for an event)
  const policyContext = { kind: kind ?? 'event', qos, now } as const;
  for (const p of policyProblems(policyInput, policyContext)) {
    const field = p.field === 'deadline' && input.command?.deadline !== undefined ? 'command.deadline' : `policy.${p.field}`;
    problems.push({ field, message: p.message });
  }

  if (input.payload === undefined && !bad.has('payload')) problems.push({ field: 'payload', message: 'is required' });
  const body = typeof input.payload === 'string' ? input.payload : JSON.stringify(input.payload ?? null);
  const bytes = Buffer.byteLength(body ?? '', 'utf8');
  const maxBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (bytes > maxBytes) problems.push({ field: 'payload', message: `is ${bytes} bytes, over the limit of ${maxBytes} bytes` });

  if (problems.length > 0 || !url || !kind) throw new InvalidInputError(problems, 'delivery');

  const messageId = input.messageId ?? randomUUID();
  const validTarget: Target =
    mqttTopic === undefined
      ? { url: url.toString(), method: target.method ?? 'POST', headers: target.headers ?? {}, timeout }
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
  return {
    deliveryId: deliveryIdOf(input.tenant, input.device, messageId),
    messageId,
    kind,
    qos,
    tenant: input.tenant,
    device: input.device,
    endpoint: url.host,
    target: validTarget,
    body,
    contentType: input.contentType ?? (typeof input.payload === 'string' ? 'text/plain; charset=utf-8' : 'application/json'),
    command: input.command ? { requestId: input.command.requestId, status: input.command.status ?? 200 } : null,
    policy: validatePolicy(policyInput, { kind, qos, now }),
    overrides: input.overrides ?? {},
    submittedAt: now,
  };
}

const PLACEHOLDERS: Record<string, (i: DeliveryInput) => string | undefined> = {
  tenant: (i) => i.tenant,
  device: (i) => i.device,
  requestId: (i) => i.command?.requestId,
  status: (i) => (i.command ? String(i.command.status ?? 200) : undefined),
};

/**
 * Checks what an mqtt(s) target must and must not have; returns its topic, placeholders filled in
 * (undefined when the topic itself is wrong: the problem is then recorded).
 */
function mqttTargetProblems(
  url: URL,
  target: { method?: unknown; headers?: unknown } & Omit<MqttTargetInput, 'url' | 'timeout'>,
  input: DeliveryInput,
  kind: MessageKind | undefined,
  urlField: string,
  bad: Set<string | undefined>,
  problems: Problem[],
): string | undefined {
  for (const field of HTTP_FIELDS) {
    if (target[field] !== undefined) problems.push({ field: `target.${field}`, message: 'applies to http:// and https:// targets only' });
  }
  // never quote the URL here: it may hold a password
  if (url.username || url.password) {
    problems.push({ field: urlField, message: 'must not carry a user name or password: name a credential the worker resolves in target.credential (README, "MQTT credentials")' });
  }
  if (!url.hostname) problems.push({ field: urlField, message: 'must name the broker: mqtt://host:port' });
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) {
    problems.push({ field: urlField, message: 'must be the broker alone (mqtt://host:port), without a path, query or fragment; give the topic in target.topic' });
  }
  if (target.tls !== undefined && url.protocol !== 'mqtts:') problems.push({ field: 'target.tls', message: 'applies to mqtts:// targets only' });

  const field = target.topic === undefined ? 'target' : 'target.topic';
  const template = target.topic ?? (kind ? DEFAULT_MQTT_TOPICS[kind] : undefined);
  // the topic is made from these fields: with one of them wrong, there is nothing more to say about it
  if (template === undefined || ['tenant', 'device', 'command'].some((f) => bad.has(f))) return undefined;
  const topic = template.replace(/\{(tenant|device|requestId|status)\}/g, (whole, key: string) => PLACEHOLDERS[key]?.(input) ?? whole);
  const left = topic.match(/\{(requestId|status)\}/g);
  const before = problems.length;
  if (left) problems.push({ field, message: `uses ${[...new Set(left)].join(' and ')}, which only a command response (with its command) has` });
  if (topic === '') problems.push({ field, message: 'must not be empty' });
  if (/[+#]/.test(topic)) problems.push({ field, message: 'must not contain the wildcards "+" or "#": a message is published to one topic' });
  if (topic.includes('\u0000')) problems.push({ field, message: 'must not contain the NUL character' });
  if (Buffer.byteLength(topic, 'utf8') > 65_535) problems.push({ field, message: 'is longer than the 65,535 bytes MQTT allows' });
  return problems.length === before ? topic : undefined;
}

function expandUrl(url: string, input: DeliveryInput): string {
  return url.replace(/\{(tenant|device|requestId|status)\}/g, (whole, key: string) => {
    const value = PLACEHOLDERS[key]?.(input);
    return value === undefined ? whole : encodeURIComponent(value);
  });
}

/** zod's issues as problems that name their fields (`what` when the whole input is wrong). */
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
