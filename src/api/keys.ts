import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Problem } from '../errors';
import { tenantSchema } from '../validation/limits';
import { zodProblems } from '../validation/delivery';

/** What a key may do: submit deliveries; act on them (controls, redrive, subscriptions); read them. */
export const ROLES = ['produce', 'operate', 'read'] as const;
export type Role = (typeof ROLES)[number];

/** The tenants of a key that may see every tenant (an operator of the whole installation). */
export const ALL_TENANTS = '*';

/** A request rate: at most `max` in each window of `windowMs`. */
export interface Rate {
  max: number;
  windowMs: number;
}

/** An API key as the server keeps it: its hash, never the key. */
export interface ApiKey {
  /** What the access log names it by: the key file's `name`, else the start of its hash. */
  name: string;
  sha256: Buffer;
  /** The tenants it may see, or `*` for all. */
  tenants: readonly string[] | typeof ALL_TENANTS;
  roles: ReadonlySet<Role>;
  /** Its own rate limit, in place of the server's. */
  rate?: Rate | null;
}

const WINDOWS: Record<string, number> = { s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000 };
export const RATE_RULE = 'must be requests per second (100 or 100/s), per minute (600/min), per hour (N/h), or off';

/** `100`, `100/s`, `600/min`, `10/h` or `off` (null); undefined when it is none of those. */
export function parseRate(text: string): Rate | null | undefined {
  if (text.trim() === 'off') return null;
  const m = /^\s*(\d+)\s*(?:\/\s*(s|sec|m|min|h))?\s*$/.exec(text);
  if (!m || Number(m[1]) < 1) return undefined;
  return { max: Number(m[1]), windowMs: WINDOWS[m[2] ?? 's']! };
}

const entrySchema = z
  .object({
    key: z
      .string({ error: 'must be a string: the secret callers send as `Authorization: Bearer <key>`' })
      .regex(/^[\x21-\x7e]{16,512}$/, {
        error: 'must be 16 to 512 printable ASCII characters without spaces (e.g. `openssl rand -hex 32`)',
      })
      .optional(),
    sha256: z
      .string({ error: 'must be a string' })
      .regex(/^[0-9a-fA-F]{64}$/, { error: 'must be the SHA-256 of the key, 64 hex digits (`printf %s "$KEY" | sha256sum`)' })
      .optional(),
    name: z
      .string({ error: 'must be a string' })
      .regex(/^[\x21-\x7e]{1,64}$/, { error: 'must be 1 to 64 printable ASCII characters' })
      .optional(),
    tenants: z
      .array(z.union([z.literal(ALL_TENANTS), tenantSchema()], { error: 'must be tenant ids, or "*" for every tenant' }), {
        error: 'must be a list of tenant ids (or ["*"] for every tenant)',
      })
      .min(1, { error: 'must name at least one tenant' }),
    roles: z
      .array(z.enum(ROLES, { error: `must be one of ${ROLES.join(', ')}` }), { error: `must be a list of roles: ${ROLES.join(', ')}` })
      .min(1, { error: `must name at least one role: ${ROLES.join(', ')}` }),
    rateLimit: z.union([z.string(), z.number()], { error: RATE_RULE }).optional(),
  })
  .strict();

/**
 * The keys of a key file (a JSON array of `{ key | sha256, tenants, roles, name?, rateLimit? }`), hashed: the
 * secrets themselves are dropped here. Every problem is returned, each naming its entry and field.
 */
export function parseKeys(json: unknown): { keys: ApiKey[]; problems: Problem[] } {
  if (!Array.isArray(json)) return { keys: [], problems: [{ field: '(keys)', message: 'must be a JSON array of keys' }] };
  const problems: Problem[] = [];
  const keys: ApiKey[] = [];
  const seen = new Set<string>();
  json.forEach((raw, i) => {
    const before = problems.length;
    const parsed = entrySchema.safeParse(raw);
    if (!parsed.success) return void problems.push(...zodProblems(parsed.error, `[${i}]`, [`[${i}]`]));
    const entry = parsed.data;
    if ((entry.key === undefined) === (entry.sha256 === undefined))
      problems.push({ field: `[${i}]`, message: 'give the key as "key" or its hash as "sha256", not both' });
    if (entry.tenants.includes(ALL_TENANTS) && entry.tenants.length > 1)
      problems.push({ field: `[${i}].tenants`, message: '"*" stands for every tenant: give it alone' });
    const rate = entry.rateLimit === undefined ? undefined : parseRate(String(entry.rateLimit));
    if (rate === undefined && entry.rateLimit !== undefined) problems.push({ field: `[${i}].rateLimit`, message: RATE_RULE });
    const sha256 = entry.key !== undefined ? hashOf(entry.key) : Buffer.from(entry.sha256 ?? '', 'hex');
    const hex = sha256.toString('hex');
    if (seen.has(hex)) problems.push({ field: `[${i}]`, message: 'is the same key as an earlier entry' });
    seen.add(hex);
    if (problems.length > before) return;
    keys.push({
      name: entry.name ?? `key-${hex.slice(0, 8)}`,
      sha256,
      tenants: entry.tenants.includes(ALL_TENANTS) ? ALL_TENANTS : entry.tenants,
      roles: new Set(entry.roles),
      ...(rate !== undefined && { rate }),
    });
  });
  return { keys, problems };
}

export function hashOf(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/**
 * The key a bearer token is, or undefined. Every key is compared, in constant time, whatever matched: how
 * long it takes says nothing about which key, or how much of one, a guess got right.
 */
export function findKey(keys: readonly ApiKey[], token: string): ApiKey | undefined {
  const hash = hashOf(token);
  let found: ApiKey | undefined;
  for (const key of keys) if (timingSafeEqual(key.sha256, hash) && !found) found = key;
  return found;
}

/** Whether a key may see this tenant's deliveries. */
export function holdsTenant(key: ApiKey, tenant: string): boolean {
  return key.tenants === ALL_TENANTS || key.tenants.includes(tenant);
}
