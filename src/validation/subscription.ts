import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { secretTenantProblems, type SecretTenantsLookup } from './secret-tenants';
import { brokerProblems, credentialSchema, DEFAULT_ATTEMPT_TIMEOUT_MS, tlsSchema, validateDelivery, zodProblems } from './delivery';
import { COMMAND_HEADERS, headerProblems, idSchema, parseTargetUrl, tenantSchema } from './limits';
import type { Assignable } from './schema-types';
import type { DeliveryInput, MqttTargetInput } from '../delivery/types';
import { InvalidInputError, type Problem } from '../errors';
import { parseDuration } from '../policy/duration';
import { policyProblems, validatePolicy } from '../policy/validate';
import type { BackoffPolicyInput } from '../policy/types';
import { clientIdScopeProblem, MAX_CLIENT_ID_LENGTH } from '../subscription/client-id';
import { DEFAULT_DOWNTIME_THRESHOLD_MS } from '../subscription/downtime';
import { subscriptionIdOf, type CommandSubscription, type SubscriptionInput } from '../subscription/types';

/** Eclipse Hono's command topic for one device (its MQTT adapter: `command/[tenant]/[device]/req/#`). */
export const DEFAULT_COMMAND_TOPIC = 'command/{tenant}/{device}/req/#';
/** How long one command's hand-off to the callback is retried: a command response's own default bound. */
export const DEFAULT_COMMAND_MAX_AGE_MS = 5 * 60_000;
const MAX_TIMEOUT_MS = 5 * 60_000;
const BROKER_USER_INFO = 'name a credential the worker resolves in broker.credential';
const CALLBACK_USER_INFO = 'send credentials in callback.headers (e.g. Authorization)';

const duration = z.union([z.number(), z.string()], { error: 'must be milliseconds or a duration string such as "10s"' });
const urlOrObject = (fields: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be a URL or { ${fields} }`),
});

/** A client id: printable ASCII, a slash allowed (its tenant's prefix has one), no whitespace nor a topic's wildcards. */
const clientIdSchema = z
  .string({ error: 'must be a string (the client id)' })
  .min(1, { error: 'must not be empty' })
  .max(MAX_CLIENT_ID_LENGTH, { error: `must be at most ${MAX_CLIENT_ID_LENGTH} characters` })
  .regex(/^[^\s+#]*$/, { error: 'must not contain whitespace, "+" or "#"' })
  .regex(/^[\x21-\x7e]*$/, { error: 'must be printable ASCII, without control characters' });

const brokerSchema = z
  .object({
    url: z.string({ error: 'must be a URL string' }),
    topic: z.string({ error: 'must be a string' }).optional(),
    protocolVersion: z.enum(['5', '3.1.1'], { error: 'must be "5" or "3.1.1"' }).optional(),
    credential: credentialSchema.optional(),
    timeout: duration.optional(),
    tls: tlsSchema.optional(),
    clientId: clientIdSchema.optional(),
  })
  .strict();

const callbackSchema = z
  .object({
    url: z.string({ error: 'must be a URL string' }),
    headers: z.record(z.string(), z.string({ error: 'header values must be strings' })).optional(),
    timeout: duration.optional(),
  })
  .strict();

const inputSchema = z
  .object({
    tenant: tenantSchema(),
    device: idSchema('device'),
    broker: z.union([z.string(), brokerSchema], urlOrObject('url, topic?, protocolVersion?, credential?, timeout?, tls?, clientId?')),
    callback: z.union([z.string(), callbackSchema], urlOrObject('url, headers?, timeout?')),
    response: z
      .object({ target: z.unknown().optional(), policy: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional() })
      .strict()
      .optional(),
    policy: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
    commandMaxAge: duration.optional(),
    downtimeThreshold: duration.optional(),
  })
  .strict();

/** The shape of a subscription input (the HTTP API's OpenAPI document is made from it); validateSubscription checks the rest. */
export const subscriptionInputSchema = inputSchema;
// SubscriptionInput and the schema say the same, both ways, but for what is checked later, field by field: the
// response's target (as a delivery's) and the policies (by validatePolicy), which the schema takes as any value
type Shaped<T> = Omit<T, 'response' | 'policy'>;
type _SchemaIsSubscriptionInput = Assignable<Shaped<z.output<typeof inputSchema>>, Shaped<SubscriptionInput>>;
type _SubscriptionInputIsSchema = Assignable<Shaped<SubscriptionInput>, Shaped<z.input<typeof inputSchema>>>;

export interface ValidateSubscriptionOptions {
  /** Epoch ms; default Date.now(). */
  now?: number;
  /** As a delivery's (ValidateOptions.secretTenants): `broker.credential` and the response target's secret must be for the tenant. */
  secretTenants?: SecretTenantsLookup;
}

/**
 * Validates a subscription and fills in every default; throws InvalidInputError naming each wrong field
 * (`broker.topic`, `callback`, `response.target.credential`, `policy.max`, …) at once.
 */
export function validateSubscription(raw: unknown, options: ValidateSubscriptionOptions = {}): CommandSubscription {
  const now = options.now ?? Date.now();
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InvalidInputError([{ field: '(subscription)', message: 'must be an object' }], 'subscription');
  }
  const parsed = inputSchema.safeParse(raw);
  const problems: Problem[] = parsed.success ? [] : zodProblems(parsed.error, '(subscription)');
  const bad = new Set(problems.map((p) => p.field.split('.')[0]));
  const input = (parsed.success ? parsed.data : raw) as SubscriptionInput;
  const fill = (text: string) =>
    text.replace(/\{(tenant|device)\}/g, (whole, key: 'tenant' | 'device') => (bad.has(key) ? whole : input[key]));

  // the broker
  const broker = bad.has('broker') ? undefined : typeof input.broker === 'string' ? { url: input.broker } : input.broker;
  const brokerField = typeof input.broker === 'string' ? 'broker' : 'broker.url';
  let brokerUrl: URL | undefined;
  if (broker) {
    brokerUrl = parseUrl(broker.url, brokerField, ['mqtt', 'mqtts'], BROKER_USER_INFO, problems);
    if (brokerUrl) {
      const alone = '; give the topic filter in broker.topic';
      brokerProblems(brokerUrl, broker, { url: brokerField, tls: 'broker.tls', alone, what: 'brokers' }, problems);
    }
  }
  if (broker && !bad.has('tenant'))
    problems.push(...secretTenantProblems(options.secretTenants, 'credential', broker.credential, input.tenant, 'broker.credential'));
  const topic = fill(broker?.topic ?? DEFAULT_COMMAND_TOPIC);
  if (broker && !bad.has('tenant') && !bad.has('device'))
    for (const message of topicFilterProblems(topic))
      problems.push({ field: broker.topic === undefined ? 'broker' : 'broker.topic', message });
  const brokerTimeout = timeoutOf(broker?.timeout, 'broker.timeout', problems);

  // the callback
  const callback = bad.has('callback') ? undefined : typeof input.callback === 'string' ? { url: input.callback } : input.callback;
  const callbackField = typeof input.callback === 'string' ? 'callback' : 'callback.url';
  const callbackUrl = callback ? parseUrl(callback.url, callbackField, ['http', 'https'], CALLBACK_USER_INFO, problems) : undefined;
  if (callback?.headers) problems.push(...headerProblems(callback.headers, 'callback.headers', COMMAND_HEADERS));
  const callbackTimeout = timeoutOf(callback?.timeout, 'callback.timeout', problems);

  // the policies and bounds
  const policyInput: BackoffPolicyInput = { maxAge: null, ...((bad.has('policy') ? {} : (input.policy ?? {})) as BackoffPolicyInput) };
  for (const p of policyProblems(policyInput, { kind: 'event', now })) problems.push({ field: `policy.${p.field}`, message: p.message });
  const commandMaxAge = bad.has('commandMaxAge') ? 0 : positive(input.commandMaxAge, 'commandMaxAge', DEFAULT_COMMAND_MAX_AGE_MS, problems);
  const downtimeThresholdMs = bad.has('downtimeThreshold')
    ? 0
    : positive(input.downtimeThreshold, 'downtimeThreshold', DEFAULT_DOWNTIME_THRESHOLD_MS, problems);

  if (broker?.clientId !== undefined && !bad.has('tenant')) {
    const problem = clientIdScopeProblem(broker.clientId, input.tenant);
    if (problem) problems.push({ field: 'broker.clientId', message: problem });
  }
  const clientId = broker?.clientId ?? derivedClientId();

  // the responses: checked now as a delivery of one sample command, so a wrong target fails the start
  const responseTarget: DeliveryInput['target'] | undefined =
    input.response?.target !== undefined
      ? (input.response.target as DeliveryInput['target'])
      : broker
        ? ({
            url: broker.url,
            ...(broker.protocolVersion && { protocolVersion: broker.protocolVersion }),
            ...(broker.credential && { credential: broker.credential }),
            ...(broker.tls && { tls: broker.tls }),
            ...(broker.timeout !== undefined && { timeout: broker.timeout }),
          } satisfies MqttTargetInput)
        : undefined;
  const responsePolicy = (input.response?.policy as BackoffPolicyInput | undefined) ?? null;
  if (responseTarget !== undefined && !bad.has('response') && !bad.has('tenant') && !bad.has('device')) {
    try {
      sampleResponse(input.tenant, input.device, responseTarget, responsePolicy, { now, secretTenants: options.secretTenants });
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
      // a default target made from a wrong broker repeats the broker's problems: name them once
      const fromBroker = input.response?.target === undefined;
      for (const p of err.problems) {
        if (fromBroker && p.field.startsWith('target')) continue;
        if (p.field.startsWith('target') || p.field.startsWith('policy'))
          problems.push({ field: `response.${p.field}`, message: p.message });
      }
    }
  }

  if (problems.length > 0 || !brokerUrl || !callbackUrl || !broker || !callback || responseTarget === undefined)
    throw new InvalidInputError(problems, 'subscription');

  const policy = validatePolicy(policyInput, { kind: 'event', now });
  return {
    subscriptionId: subscriptionIdOf(input.tenant, input.device),
    tenant: input.tenant,
    device: input.device,
    broker: {
      url: `${brokerUrl.protocol}//${brokerUrl.host}`,
      topic,
      protocolVersion: broker.protocolVersion ?? '5',
      credential: broker.credential ?? null,
      timeout: brokerTimeout,
      tls: broker.tls ?? null,
      clientId,
    },
    endpoint: brokerUrl.host,
    callback: { url: callbackUrl.toString(), headers: callback.headers ?? {}, timeout: callbackTimeout },
    response: { target: responseTarget, policy: responsePolicy },
    policy,
    commandPolicy: { ...policy, maxAttempts: 0, maxAge: commandMaxAge, deadline: null },
    downtimeThresholdMs,
    submittedAt: now,
  };
}

/**
 * The client id of a subscription that names none: `rdsub` and 72 random bits in hex, 23 characters (what
 * every MQTT 3.1.1 broker must accept). Made once, at submit: it travels in the workflow's input, so every
 * hold, continue-as-new and worker resumes the same broker session. Random, not a hash of the subscription
 * id: anyone could have computed that one and taken the session, and its commands, over.
 */
function derivedClientId(): string {
  return `rdsub${randomBytes(9).toString('hex')}`;
}

/**
 * The command-response delivery for one answered command (the activity builds it from the callback's
 * answer); throws InvalidInputError when it cannot be delivered as given.
 */
export function responseDelivery(
  subscription: Pick<CommandSubscription, 'tenant' | 'device' | 'response'>,
  answer: { requestId: string; status: number; payload: string; contentType: string | undefined },
  now = Date.now(),
  secretTenants?: SecretTenantsLookup,
) {
  return validateDelivery(
    {
      kind: 'command-response',
      tenant: subscription.tenant,
      device: subscription.device,
      // one response per request id: a command received twice (redelivered by the broker) is answered once
      messageId: `response-${answer.requestId}`,
      target: subscription.response.target,
      payload: answer.payload,
      ...(answer.contentType && { contentType: answer.contentType }),
      command: { requestId: answer.requestId, status: answer.status },
      ...(subscription.response.policy && { policy: subscription.response.policy }),
    },
    { now, ...(secretTenants && { secretTenants }) },
  );
}

function sampleResponse(
  tenant: string,
  device: string,
  target: DeliveryInput['target'],
  policy: BackoffPolicyInput | null,
  options: { now: number; secretTenants?: SecretTenantsLookup | undefined },
): void {
  responseDelivery(
    { tenant, device, response: { target, policy } },
    { requestId: 'sample', status: 200, payload: '', contentType: undefined },
    options.now,
    options.secretTenants,
  );
}

/** What is wrong with an MQTT topic filter (MQTT 5.0 §4.7): `#` only as the last level, `+` only as a whole level. */
export function topicFilterProblems(filter: string): string[] {
  const problems: string[] = [];
  if (filter === '') problems.push('must not be empty');
  if (filter.includes('\u0000')) problems.push('must not contain the NUL character');
  const levels = filter.split('/');
  levels.forEach((level, i) => {
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) problems.push('may have "#" only as the whole last level');
    if (level.includes('+') && level !== '+') problems.push('may have "+" only as a whole level');
  });
  if (/\{(tenant|device)\}/.test(filter)) problems.push('has a placeholder that could not be filled in (the tenant or device is wrong)');
  return [...new Set(problems)];
}

function parseUrl(text: string, field: string, schemes: string[], userInfo: string, problems: Problem[]): URL | undefined {
  const parsed = parseTargetUrl(text, schemes, userInfo);
  problems.push(...parsed.problems.map((message) => ({ field, message })));
  return parsed.problems.length ? undefined : parsed.url;
}

function timeoutOf(value: unknown, field: string, problems: Problem[]): number {
  if (value === undefined) return DEFAULT_ATTEMPT_TIMEOUT_MS;
  const t = parseDuration(value);
  if (t === undefined || t <= 0 || t > MAX_TIMEOUT_MS) {
    problems.push({ field, message: `must be a duration above 0 and at most 5m, got ${JSON.stringify(value)}` });
    return DEFAULT_ATTEMPT_TIMEOUT_MS;
  }
  return t;
}

function positive(value: unknown, field: string, fallback: number, problems: Problem[]): number {
  if (value === undefined) return fallback;
  const t = parseDuration(value);
  if (t === undefined || t <= 0) {
    problems.push({ field, message: `must be a duration above 0, got ${JSON.stringify(value)}` });
    return fallback;
  }
  return t;
}
