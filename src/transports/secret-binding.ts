import type { TransportOutcome } from '../classify/types';

/**
 * A secret the worker resolves by name (an MQTT credential, a webhook signing secret) is bound to the
 * tenants that may use it and to the targets it belongs to, and is released only for a delivery of one of
 * those tenants going to one of those targets. A producer names the secret and the target, so without the
 * binding any producer could name a secret and a server of its own and receive it; without the tenants,
 * any tenant could have its messages signed, or published with the login, of another. Targets compare as
 * `scheme://host:port`: the scheme exactly (a secret bound to a TLS target is never sent in clear), the
 * host case-insensitively but otherwise as written (a trailing dot or another spelling of an IP address is
 * another target), the port with the scheme's default filled in.
 */

/** The default port of each scheme a target of this kind may have: `{ mqtt: 1883, mqtts: 8883 }`. */
export type DefaultPorts = Readonly<Record<string, number>>;

/** One kind of secret resolved by name, and how its configuration binds it to targets. */
export interface SecretKind<T, O = never> {
  /** In messages: `MQTT credential`. */
  label: string;
  /** The field of its configuration that lists its targets: `brokers`. */
  field: string;
  ports: DefaultPorts;
  /** A target, for messages: `mqtts://hub.example.com:8883`. */
  example: string;
  /** The targets a resolved secret is bound to, as configured (checked again here). */
  targetsOf(secret: T): unknown;
  /** The tenants that may use a resolved secret, as configured (`"tenants"`, checked again here). */
  tenantsOf(secret: T): unknown;
  /** Where the worker looks for secret `name`, in words (the variables to set). */
  sources(name: string): string;
  /**
   * When an entry may also be an object `{ url, …options }`: the options' names, and how to read them
   * (throws a message naming the bad one). Options say how to reach a target (a broker's TLS trust), not
   * whether the secret may go there: the URL alone says that.
   */
  options?: { fields: readonly string[]; read(entry: Readonly<Record<string, unknown>>, origin: string): O };
}

/** A configured target: where it is, and the options its entry gave (object entries only). */
export interface BoundTarget<O> {
  origin: string;
  options?: O;
}

/** `scheme://host:port`: where a connection to `url` goes, in one spelling. Throws when it cannot say. */
export function targetOrigin(url: string, ports: DefaultPorts): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('is not a URL');
  }
  const scheme = parsed.protocol.slice(0, -1);
  const port = ports[scheme];
  if (port === undefined) throw new Error(`scheme ${scheme} is not one of ${Object.keys(ports).join(', ')}`);
  // URL lower-cases the hosts of http(s) only; those of other schemes come as written
  if (!parsed.hostname) throw new Error('names no host');
  return `${scheme}://${parsed.hostname.toLowerCase()}:${parsed.port || port}`;
}

/**
 * A secret's configured targets. Throws one error naming every bad entry; an entry with a user name or
 * password in it is not quoted (it may hold a secret).
 */
export function parseBinding<T, O>(value: unknown, kind: SecretKind<T, O>): BoundTarget<O>[] {
  const required = `"${kind.field}" is required: the ${kind.field} this ${kind.label} may be sent to, e.g. "${kind.field}": ["${kind.example}"]`;
  if (value === undefined || (Array.isArray(value) && value.length === 0)) throw new Error(required);
  if (!Array.isArray(value)) throw new Error(`"${kind.field}" must be a list of URLs, e.g. ["${kind.example}"]`);
  const problems: string[] = [];
  const bound = value.flatMap((entry: unknown, i): BoundTarget<O>[] => {
    try {
      return [boundTarget(entry, kind)];
    } catch (err) {
      const url = isObject(entry) ? entry.url : entry;
      const quoted = typeof url === 'string' && !/^[^/]*\/\/[^/]*@/.test(url) ? ` (${JSON.stringify(url)})` : '';
      problems.push(`entry ${i + 1}${quoted}: ${(err as Error).message}`);
      return [];
    }
  });
  if (problems.length) throw new Error(`"${kind.field}": ${problems.join('; ')}`);
  return bound;
}

/** The tenants a secret may be used for: tenant ids, or every tenant (`"*"`, said explicitly). */
export type SecretTenants = readonly string[] | typeof EVERY_TENANT;

/** What `"tenants": ["*"]` stands for: the one way to let every tenant use a secret. */
export const EVERY_TENANT = '*';

// as a delivery's tenant (idSchema): printable ASCII without whitespace, "/", "+", "#"
const TENANT_ID = /^[!-~]{1,128}$/;
const NOT_IN_TENANT_ID = /[/+#]/;

/**
 * A secret's `"tenants"`: required, so that a secret configured before tenants existed stops the worker
 * instead of serving every tenant; `["*"]` alone allows all. Throws naming what is wrong.
 */
export function parseTenants(value: unknown, kind: { label: string }): SecretTenants {
  const example = `e.g. "tenants": ["acme"], or ["*"] for every tenant`;
  if (value === undefined || (Array.isArray(value) && value.length === 0))
    throw new Error(`"tenants" is required: the tenants whose deliveries may use this ${kind.label}, ${example}`);
  if (!Array.isArray(value)) throw new Error(`"tenants" must be a list of tenant ids, ${example}`);
  if (value.includes(EVERY_TENANT)) {
    if (value.length > 1) throw new Error('"tenants": "*" stands for every tenant: give it alone');
    return EVERY_TENANT;
  }
  const bad = value.flatMap((t: unknown, i) => (typeof t === 'string' && TENANT_ID.test(t) && !NOT_IN_TENANT_ID.test(t) ? [] : [i + 1]));
  if (bad.length)
    throw new Error(
      `"tenants": entry ${bad.join(', ')} must be a tenant id (printable ASCII without whitespace, "/", "+" or "#", at most 128) or "*"`,
    );
  return value as string[];
}

/** Whether a delivery of `tenant` may use a secret bound to `tenants`. */
export function tenantAllowed(tenants: SecretTenants, tenant: string): boolean {
  return tenants === EVERY_TENANT || tenants.includes(tenant);
}

/** One entry, read: a URL, or (when the kind has options) `{ url, …options }`. Throws what is wrong with it. */
function boundTarget<T, O>(entry: unknown, kind: SecretKind<T, O>): BoundTarget<O> {
  const fields = kind.options?.fields ?? [];
  const url = typeof entry === 'string' ? entry : isObject(entry) && kind.options ? entry.url : undefined;
  if (typeof url !== 'string')
    throw new Error(kind.options ? `must be a URL or { url, ${fields.map((f) => `${f}?`).join(', ')} }` : 'must be a string');
  const origin = targetOrigin(url, kind.ports);
  const parsed = new URL(url);
  if (parsed.username || parsed.password) throw new Error('must not carry a user name or password');
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search || parsed.hash)
    throw new Error('must be scheme://host[:port] alone, without a path, query or fragment');
  if (!isObject(entry) || !kind.options) return { origin };
  const unknown = Object.keys(entry).filter((k) => k !== 'url' && !fields.includes(k));
  if (unknown.length) throw new Error(`has unknown fields: ${unknown.join(', ')} (known: url, ${fields.join(', ')})`);
  return { origin, options: kind.options.read(entry, origin) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The configured target a connection to `url` goes to, if any (`bound` from parseBinding). */
export function matchBinding<O>(bound: readonly BoundTarget<O>[], url: string, ports: DefaultPorts): BoundTarget<O> | undefined {
  try {
    const origin = targetOrigin(url, ports);
    return bound.find((b) => b.origin === origin);
  } catch {
    return undefined;
  }
}

/** Whether a connection to `url` goes to one of the configured targets. */
export function bindingAllows(bound: readonly BoundTarget<unknown>[], url: string, ports: DefaultPorts): boolean {
  return matchBinding(bound, url, ports) !== undefined;
}

/** A secret released for a target, with the options of the target's entry (how to reach it), if it gave any. */
export type Released<T, O = never> = { ok: true; secret: T; options?: O } | { ok: false; outcome: TransportOutcome };

/**
 * The one gate a secret resolved by name passes before anything connects: resolve it (at connect time, so
 * a rotated secret or binding applies to the next connection) and release it only for a delivery of a
 * tenant it is for, going to a target it is bound to. An unknown name or a broken configuration is an
 * `invalid-target`; a tenant the secret is not for a `foreign-secret` (code `secret-not-for-tenant`); a
 * target it is not bound to an `unbound-secret` (code `secret-not-bound`): each ends the delivery rejected,
 * nothing sent. Neither refusal says which tenants or targets the secret is for.
 */
export function releaseSecret<T, O>(
  kind: SecretKind<T, O>,
  name: string,
  url: string,
  resolve: (name: string) => T | undefined,
  tenant: string,
): Released<T, O> {
  const invalid = (message: string): Released<T, O> => ({ ok: false, outcome: { kind: 'invalid-target', message } });
  let secret: T | undefined;
  let bound: BoundTarget<O>[];
  let tenants: SecretTenants;
  try {
    secret = resolve(name);
    if (secret === undefined) return invalid(`this worker has no ${kind.label} named "${name}" (set ${kind.sources(name)})`);
    tenants = parseTenants(kind.tenantsOf(secret), kind);
    bound = parseBinding(kind.targetsOf(secret), kind);
  } catch (err) {
    return invalid(`the worker's ${kind.label} "${name}" is misconfigured: ${(err as Error).message}`);
  }
  if (!tenantAllowed(tenants, tenant)) {
    const hint = `If tenant "${tenant}" may use it, add it to "tenants" in ${kind.sources(name)}`;
    return { ok: false, outcome: { kind: 'foreign-secret', secret: `${kind.label} "${name}"`, tenant, hint } };
  }
  const match = matchBinding(bound, url, kind.ports);
  if (match) return { ok: true, secret, ...(match.options !== undefined && { options: match.options }) };
  let target: string;
  try {
    target = targetOrigin(url, kind.ports);
  } catch (err) {
    return invalid(`${JSON.stringify(url)} ${(err as Error).message}`);
  }
  const hint = `If it is trusted, add it to "${kind.field}" in ${kind.sources(name)}`;
  return { ok: false, outcome: { kind: 'unbound-secret', secret: `${kind.label} "${name}"`, target, hint } };
}
