import { hostname } from 'node:os';
import { z } from 'zod';
import { batcherSettings, type BatcherOptions } from '../batching/batcher';
import { HONO_LAYOUT, HONO_UPSTREAM_FILTERS, kindsOfFilter } from '../bridge/topics';
import type { BridgeConfig, BridgeConfigInput } from '../bridge/types';
import type { DeliveryInput, MessageKind } from '../delivery/types';
import { InvalidInputError, type Problem } from '../errors';
import { parseDuration } from '../policy/duration';
import type { BackoffPolicyInput } from '../policy/types';
import { brokerProblems, credentialSchema, DEFAULT_ATTEMPT_TIMEOUT_MS, tlsSchema, validateDelivery, zodProblems } from './delivery';
import { idSchema, parseTargetUrl } from './limits';
import type { Assignable } from './schema-types';
import { topicFilterProblems } from './subscription';

export const DEFAULT_GROUP = 'redeliver';
export const DEFAULT_MESSAGE_ID_PROPERTY = 'message-id';
/**
 * The batcher's own concurrency (8 batches of 500 being started): acknowledgements go in order, so what may be in
 * flight bounds how many batches can be starting at once (with 1,000, two).
 */
export const DEFAULT_RECEIVE_MAXIMUM = 4_000;
/** Longer than an outage a restart rides out: the broker keeps the bridge's messages that long. */
const DEFAULT_SESSION_EXPIRY_S = 24 * 3600;
const DEFAULT_KEEPALIVE_S = 30;
/** MQTT 5's largest session expiry short of "never" (0xFFFFFFFF) and largest keep-alive. */
const MAX_SESSION_EXPIRY_S = 0xfffffffe;
const MAX_KEEPALIVE_S = 65_535;
const MAX_TIMEOUT_MS = 5 * 60_000;
/** MQTT 5.0 §4.8.2: a share name is one topic level without wildcards; kept to what any broker takes. */
const SHARE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const KINDS: readonly MessageKind[] = ['telemetry', 'event', 'command-response'];
const SAMPLE = 'sample';

const duration = z.union([z.number(), z.string()], { error: 'must be milliseconds or a duration string such as "10s"' });
const want = (message: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : message);
// a target's fields are a delivery's: checked below by validating a delivery that uses it
const target = z.union([z.string(), z.record(z.string(), z.unknown())], { error: 'must be a URL or a target object { url, … }' });

const brokerSchema = z
  .object({
    url: z.string({ error: want('must be a URL string') }),
    credential: credentialSchema.optional(),
    tls: tlsSchema.optional(),
    clientId: idSchema('client id').optional(),
    sessionExpiry: duration.optional(),
    keepalive: duration.optional(),
    timeout: duration.optional(),
  })
  .strict();

const configSchema = z
  .object({
    broker: z.union([z.string(), brokerSchema], {
      error: want('must be a URL or { url, credential?, tls?, clientId?, sessionExpiry?, keepalive?, timeout? }'),
    }),
    group: z.string({ error: 'must be a string' }).regex(SHARE_NAME, { error: 'must be 1-64 letters, digits, "_", "." or "-"' }).optional(),
    topics: z
      .array(z.string({ error: 'must be a topic filter string' }), { error: 'must be a list of topic filters' })
      .min(1, { error: 'must list at least one topic filter' })
      .optional(),
    messageIdProperty: z
      .string({ error: 'must be the name of an MQTT 5 user property' })
      .min(1, { error: 'must not be empty' })
      .max(256, { error: 'must be at most 256 characters' })
      .optional(),
    target: target.optional(),
    targets: z
      .object(
        { telemetry: target.optional(), event: target.optional(), 'command-response': target.optional() },
        { error: 'must be an object' },
      )
      .strict()
      .optional(),
    policy: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
    batch: z
      .object(
        {
          maxMessages: z.number().optional(),
          maxBytes: z.number().optional(),
          linger: duration.optional(),
          maxInFlight: z.number().optional(),
        },
        { error: 'must be an object { maxMessages?, maxBytes?, linger?, maxInFlight? }' },
      )
      .strict()
      .optional(),
    receiveMaximum: z
      .number({ error: 'must be a whole number from 1 to 65535' })
      .int({ error: 'must be a whole number from 1 to 65535' })
      .min(1, { error: 'must be at least 1' })
      .max(65_535, { error: 'must be at most 65535' })
      .optional(),
  })
  .strict();
// what the schema lets through is a BridgeConfigInput; not the other way round: targets and the policy are
// checked later, as a delivery's, and the schema takes them as any value
type _SchemaIsBridgeConfigInput = Assignable<z.output<typeof configSchema>, BridgeConfigInput>;

/**
 * A bridge's configuration, checked and with its defaults; throws InvalidInputError naming every wrong field
 * at once (`broker.url`, `topics[1]`, `targets.event.timeout`, `batch.linger`, …). Each target is checked as
 * a delivery of each kind that the topics can bring would check it, so a target that would refuse every
 * message stops the bridge before it connects.
 */
export function validateBridgeConfig(raw: unknown): BridgeConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new InvalidInputError([{ field: '(configuration)', message: 'must be a JSON object' }], 'bridge configuration');
  const parsed = configSchema.safeParse(raw);
  const problems: Problem[] = parsed.success ? [] : zodProblems(parsed.error, '(configuration)').map(indexed);
  const bad = new Set(problems.map((p) => p.field.split(/[.[]/)[0]));
  const input = (parsed.success ? parsed.data : raw) as BridgeConfigInput;

  const group = input.group ?? DEFAULT_GROUP;
  const broker = brokerOf(input.broker, group, new Set(problems.map((p) => p.field)), problems);
  const topics = bad.has('topics') ? [] : (input.topics ?? [...HONO_UPSTREAM_FILTERS]);
  topics.forEach((filter, i) => problems.push(...filterProblems(filter).map((message) => ({ field: `topics[${i}]`, message }))));
  const policy = bad.has('policy') ? null : ((input.policy as BackoffPolicyInput | undefined) ?? null);
  const targets = bad.has('target') || bad.has('targets') ? undefined : targetsOf(input, topics, policy, problems);
  const batch = bad.has('batch') ? {} : (input.batch ?? {});
  try {
    batcherSettings(batch, 'batch.');
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    problems.push(...err.problems);
  }

  if (problems.length > 0 || !broker || !targets) throw new InvalidInputError(problems, 'bridge configuration');
  return {
    broker,
    group,
    topics,
    mapping: {
      targets,
      policy,
      messageIdProperty: input.messageIdProperty ?? DEFAULT_MESSAGE_ID_PROPERTY,
      clientId: broker.clientId,
    },
    batch: batch as BatcherOptions,
    receiveMaximum: input.receiveMaximum ?? DEFAULT_RECEIVE_MAXIMUM,
  };
}

/** zod names a list's element `topics.1`: as the docs write it, `topics[1]`. */
function indexed(p: Problem): Problem {
  return { ...p, field: p.field.replace(/\.(\d+)(?=\.|$)/g, '[$1]') };
}

/** The broker, checked as far as its fields allow: those zod already refused (`reported`) are not checked again. */
function brokerOf(
  given: BridgeConfigInput['broker'] | undefined,
  group: string,
  reported: Set<string>,
  problems: Problem[],
): BridgeConfig['broker'] | undefined {
  const broker = typeof given === 'string' ? { url: given } : given;
  if (typeof broker !== 'object' || broker === null || typeof broker.url !== 'string') return undefined;
  const field = typeof given === 'string' ? 'broker' : 'broker.url';
  const before = problems.length;
  const parsed = parseTargetUrl(broker.url, ['mqtt', 'mqtts'], 'name a credential in broker.credential (docs/mqtt.md, "Credentials")');
  problems.push(...parsed.problems.map((message) => ({ field, message })));
  if (parsed.url && !reported.has('broker.tls'))
    brokerProblems(parsed.url, broker, { url: field, tls: 'broker.tls', alone: '', what: 'brokers' }, problems);
  const seconds = (value: unknown, name: string, fallback: number, max: number, min = 1) =>
    reported.has(`broker.${name}`)
      ? fallback
      : durationIn(value, `broker.${name}`, fallback * 1000, { min: min * 1000, max: max * 1000 }, problems) / 1000;
  const sessionExpirySeconds = Math.round(
    seconds(broker.sessionExpiry, 'sessionExpiry', DEFAULT_SESSION_EXPIRY_S, MAX_SESSION_EXPIRY_S, 0),
  );
  const keepaliveSeconds = Math.round(seconds(broker.keepalive, 'keepalive', DEFAULT_KEEPALIVE_S, MAX_KEEPALIVE_S));
  const timeoutMs = seconds(broker.timeout, 'timeout', DEFAULT_ATTEMPT_TIMEOUT_MS / 1000, MAX_TIMEOUT_MS / 1000, 0.001) * 1000;
  if (problems.length > before || !parsed.url) return undefined;
  return {
    url: `${parsed.url.protocol}//${parsed.url.host}`,
    credential: broker.credential ?? null,
    tls: broker.tls ?? null,
    // a restarted bridge must come back as the same session, to be sent what it had not acknowledged
    clientId: broker.clientId ?? `${group}-${hostname()}`.replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 128),
    sessionExpirySeconds,
    keepaliveSeconds,
    timeoutMs,
  };
}

/** A duration in ms within [min, max], or the fallback (and a problem naming `field`). */
function durationIn(value: unknown, field: string, fallback: number, range: { min: number; max: number }, problems: Problem[]): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value);
  if (ms !== undefined && ms >= range.min && ms <= range.max) return ms;
  const limits = `from ${range.min / 1000} s to ${range.max / 1000} s`;
  problems.push({ field, message: `must be a duration ${limits}, got ${JSON.stringify(value)}` });
  return fallback;
}

function filterProblems(filter: string): string[] {
  if (/^\$share\//.test(filter)) return ['must be the topic filter alone: the bridge subscribes to $share/<group>/<filter> itself'];
  const problems = topicFilterProblems(filter);
  if (problems.length === 0 && kindsOfFilter(filter).length === 0) problems.push(`matches no topic of Hono's layout (${HONO_LAYOUT})`);
  return problems;
}

/** Each kind's target, for the kinds the topics can bring; each checked as a sample delivery of that kind. */
function targetsOf(
  input: BridgeConfigInput,
  topics: readonly string[],
  policy: BackoffPolicyInput | null,
  problems: Problem[],
): Record<MessageKind, DeliveryInput['target']> | undefined {
  const needed = new Set(topics.flatMap(kindsOfFilter));
  const targets: Partial<Record<MessageKind, DeliveryInput['target']>> = {};
  const seen = new Set<string>();
  for (const kind of KINDS) {
    const own = input.targets?.[kind];
    const chosen = (own ?? input.target) as DeliveryInput['target'] | undefined;
    if (!needed.has(kind)) continue;
    if (chosen === undefined) {
      problems.push({ field: 'target', message: `is required: ${kind} messages need a target (give target, or targets.${kind})` });
      continue;
    }
    targets[kind] = chosen;
    for (const p of sampleProblems(kind, chosen, policy)) {
      const field = p.field.startsWith('target') && own !== undefined ? p.field.replace(/^target/, `targets.${kind}`) : p.field;
      // the same target or policy for several kinds: its problems once
      if (seen.has(`${field}|${p.message}`)) continue;
      seen.add(`${field}|${p.message}`);
      problems.push({ field, message: p.message });
    }
  }
  if (problems.length > 0) return undefined;
  // a kind the topics never bring keeps the shared target, unchecked: no message of it ever comes
  return Object.fromEntries(KINDS.map((k) => [k, targets[k] ?? input.target ?? ''])) as Record<MessageKind, DeliveryInput['target']>;
}

/** What a delivery of `kind` to `target` would be refused for: target and policy problems only. */
function sampleProblems(kind: MessageKind, target: DeliveryInput['target'], policy: BackoffPolicyInput | null): Problem[] {
  try {
    validateDelivery({
      kind,
      tenant: SAMPLE,
      device: SAMPLE,
      messageId: SAMPLE,
      target,
      payload: '',
      ...(kind === 'command-response' && { command: { requestId: SAMPLE, status: 200 } }),
      ...(policy && { policy }),
    });
    return [];
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    return err.problems.filter((p) => p.field.startsWith('target') || p.field.startsWith('policy'));
  }
}
