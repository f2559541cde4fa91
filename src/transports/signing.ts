import { createHash, createHmac } from 'node:crypto';
import type { TransportOutcome } from '../classify/types';
import type { ConfigProblem } from '../config/errors';
import type { HttpRequest } from './http';
import {
  secretProblems,
  secretsFileVariable,
  secretSources,
  secretsFromEnvironment,
  type SecretResolver,
  type SecretSource,
} from './named-secrets';
import { parseBinding, parseTenants, releaseSecret, type SecretKind } from './secret-binding';

/*
 * Standard Webhooks signatures (https://www.standardwebhooks.com, "Signature scheme"): every request to a
 * target that names a signing secret carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature`, `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per secret, separated
 * by spaces: a receiver accepts a request when any of them matches a secret it holds, which is how a
 * secret is rotated without a moment when the two sides disagree.
 */

/** A signing secret as the worker holds it, resolved by the name a target gives: never part of a delivery. */
export interface SigningSecret {
  /**
   * The secrets to sign with, each `whsec_` and the base64 of 24 to 64 random bytes (the prefix is
   * optional); every request carries one signature per secret. Rotate by adding the new one, then,
   * once receivers have it, removing the old.
   */
  secrets: readonly string[];
  /**
   * The endpoints it signs for, `https://host[:port]`: required, and checked before every request
   * (releaseSecret). A producer names the secret and the target, so without the binding
   * any producer could have its own messages signed, sent to a server of its own, and replay them to
   * the real receiver within its tolerance.
   */
  endpoints: readonly string[];
  /**
   * The tenants whose deliveries it may sign (`["acme"]`, or `["*"]` for all): required, and checked at
   * submit where the submitter can see it and before every request, so that one tenant cannot have its
   * messages signed as another's. Operational events are tenant `redeliver`'s.
   */
  tenants: readonly string[];
}

export type SigningSecretResolver = SecretResolver<SigningSecret>;

/** The Standard Webhooks spelling of a secret: this prefix, then base64. */
const SECRET_PREFIX = 'whsec_';
/** The spec's bounds on a secret's random bytes. */
const SECRET_BYTES = { min: 24, max: 64 } as const;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Where a worker finds signing secrets: `REDELIVER_SIGNING_SECRETS_<NAME>`, else `REDELIVER_SIGNING_SECRETS_FILE`. */
const SIGNING_SOURCE: SecretSource<SigningSecret> = {
  prefix: 'REDELIVER_SIGNING_SECRETS_',
  example: '{"secrets": ["whsec_…"], "endpoints": ["https://ingest.example.com"], "tenants": ["acme"]}',
  check: checkedSigningSecret,
};

export const SIGNING_SECRETS_FILE_ENV = secretsFileVariable(SIGNING_SOURCE);

/** Signing secrets as secrets bound to endpoints: what the request's gate (releaseSecret) checks. */
export const SIGNING_SECRET: SecretKind<SigningSecret> = {
  label: 'signing secret',
  field: 'endpoints',
  ports: { http: 80, https: 443 },
  example: 'https://ingest.example.com',
  targetsOf: (secret) => secret.endpoints,
  tenantsOf: (secret) => secret.tenants,
  sources: (name) => secretSources(SIGNING_SOURCE, name),
};

/** The worker's resolver, reading the environment at every request (a rotated secret needs no restart). */
export function signingSecretsFromEnvironment(env: NodeJS.ProcessEnv = process.env): SigningSecretResolver {
  return secretsFromEnvironment(SIGNING_SOURCE, env);
}

/** Every signing secret the environment configures, checked at the worker's start: each problem names its variable. */
export function signingSecretProblems(env: NodeJS.ProcessEnv): ConfigProblem[] {
  return secretProblems(SIGNING_SOURCE, env);
}

function checkedSigningSecret(value: unknown): SigningSecret {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('must be an object { secrets, endpoints, tenants }');
  const { secrets, endpoints, tenants, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    throw new Error(`has unknown fields: ${Object.keys(rest).join(', ')} (known: secrets, endpoints, tenants)`);
  if (!Array.isArray(secrets) || secrets.length === 0)
    throw new Error('"secrets" must be a list of one or more secrets, e.g. ["whsec_…"] (openssl rand -base64 32)');
  secrets.forEach((s, i) => secretKey(s, `"secrets" entry ${i + 1}`));
  parseBinding(endpoints, SIGNING_SECRET);
  parseTenants(tenants, SIGNING_SECRET);
  return { secrets: secrets as string[], endpoints: endpoints as string[], tenants: tenants as string[] };
}

/** A secret's key bytes; throws naming the entry, never quoting it. */
function secretKey(secret: unknown, what: string): Buffer {
  const text = typeof secret === 'string' && secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = typeof text === 'string' && BASE64.test(text) ? Buffer.from(text, 'base64') : null;
  if (!key || key.length < SECRET_BYTES.min || key.length > SECRET_BYTES.max)
    throw new Error(
      `${what} must be ${SECRET_PREFIX} and the base64 of ${SECRET_BYTES.min} to ${SECRET_BYTES.max} random bytes (openssl rand -base64 32)`,
    );
  return key;
}

/** The three Standard Webhooks headers of one request: one `v1` signature per secret. */
export function webhookHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  const signed = `${id}.${timestampSeconds}.${body}`;
  const signatures = secrets.map((s) => `v1,${createHmac('sha256', secretKey(s, 'a signing secret')).update(signed).digest('base64')}`);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signatures.join(' ') };
}

/** What a request to a target with a signing secret is to carry: the secret's name and the `webhook-id`. */
export interface Signing {
  secret: string;
  /** The message's stable id (`webhookIdOf`): the same for every attempt, so a receiver can deduplicate by it. */
  id: string;
  /** The tenant of the deliveries it carries (a batched request's are all one tenant's): the secret must be for it. */
  tenant: string;
}

/**
 * A delivery's `webhook-id`: `msg_` and the base64url SHA-256 of its delivery id
 * (`delivery/<tenant>/<device>/<messageId>`). The bare message id is the producer's, unique only within its
 * tenant and device: two tenants' `cmd-102` would have carried one id, and a receiver deduplicating by it
 * would have dropped one of them. The hash keeps the id short (47 characters) whatever the ids' lengths,
 * and the same for every attempt of the delivery.
 */
export function webhookIdOf(deliveryId: string): string {
  return `msg_${createHash('sha256').update(deliveryId).digest('base64url')}`;
}

/**
 * The request signed, or why it may not go out: the secret is released only for a tenant it is for and an
 * endpoint it is bound to (releaseSecret), so an unknown name, another tenant or an unbound endpoint ends
 * the delivery rejected, nothing sent.
 * Signed at the moment it goes: the timestamp is the wall clock's, as the receiver's tolerance reads it.
 */
export function signRequest(
  request: HttpRequest,
  signing: Signing,
  resolve: SigningSecretResolver,
  now = Date.now(),
): { ok: true; request: HttpRequest } | { ok: false; outcome: TransportOutcome } {
  const released = releaseSecret(SIGNING_SECRET, signing.secret, request.url, resolve, signing.tenant);
  if (!released.ok) return released;
  let headers: Record<string, string>;
  try {
    headers = webhookHeaders(released.secret.secrets, signing.id, Math.floor(now / 1000), request.body);
  } catch (err) {
    // a resolver of the application's own (createWorker's signingSecrets) is not checked at start
    const message = `the worker's signing secret "${signing.secret}" is misconfigured: ${(err as Error).message}`;
    return { ok: false, outcome: { kind: 'invalid-target', message } };
  }
  return { ok: true, request: { ...request, headers: { ...request.headers, ...headers } } };
}
