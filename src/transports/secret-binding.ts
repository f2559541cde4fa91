import type { TransportOutcome } from '../classify/types';

/**
 * A secret the worker resolves by name (an MQTT credential; later a webhook signing secret) is bound to
 * the targets it belongs to, and is released only for a connection to one of them. A producer names the
 * secret and the target, so without the binding any producer could name a secret and a server of its own
 * and receive it. Targets compare as `scheme://host:port`: the scheme exactly (a secret bound to a TLS
 * target is never sent in clear), the host case-insensitively but otherwise as written (a trailing dot or
 * another spelling of an IP address is another target), the port with the scheme's default filled in.
 */

/** The default port of each scheme a target of this kind may have: `{ mqtt: 1883, mqtts: 8883 }`. */
export type DefaultPorts = Readonly<Record<string, number>>;

/** One kind of secret resolved by name, and how its configuration binds it to targets. */
export interface SecretKind<T> {
  /** In messages: `MQTT credential`. */
  label: string;
  /** The field of its configuration that lists its targets: `brokers`. */
  field: string;
  ports: DefaultPorts;
  /** A target, for messages: `mqtts://hub.example.com:8883`. */
  example: string;
  /** The targets a resolved secret is bound to, as configured (checked again here). */
  targetsOf(secret: T): unknown;
  /** Where the worker looks for secret `name`, in words (the variables to set). */
  sources(name: string): string;
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
 * A secret's configured targets as origins. Throws one error naming every bad entry; an entry with a user
 * name or password in it is not quoted (it may hold a secret).
 */
export function parseBinding<T>(value: unknown, kind: SecretKind<T>): string[] {
  const required = `"${kind.field}" is required: the ${kind.field} this ${kind.label} may be sent to, e.g. "${kind.field}": ["${kind.example}"]`;
  if (value === undefined || (Array.isArray(value) && value.length === 0)) throw new Error(required);
  if (!Array.isArray(value)) throw new Error(`"${kind.field}" must be a list of URLs, e.g. ["${kind.example}"]`);
  const problems: string[] = [];
  const origins = value.flatMap((entry: unknown, i) => {
    const problem = entryProblem(entry, kind.ports);
    if (problem === undefined) return [targetOrigin(entry as string, kind.ports)];
    const quoted = typeof entry === 'string' && !/^[^/]*\/\/[^/]*@/.test(entry) ? ` (${JSON.stringify(entry)})` : '';
    problems.push(`entry ${i + 1}${quoted}: ${problem}`);
    return [];
  });
  if (problems.length) throw new Error(`"${kind.field}": ${problems.join('; ')}`);
  return origins;
}

function entryProblem(entry: unknown, ports: DefaultPorts): string | undefined {
  if (typeof entry !== 'string') return 'must be a string';
  try {
    targetOrigin(entry, ports);
  } catch (err) {
    return (err as Error).message;
  }
  const url = new URL(entry);
  if (url.username || url.password) return 'must not carry a user name or password';
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) return 'must be scheme://host[:port] alone, without a path, query or fragment';
  return undefined;
}

/** Whether a connection to `url` goes to one of `origins` (from parseBinding). */
export function bindingAllows(origins: readonly string[], url: string, ports: DefaultPorts): boolean {
  try {
    return origins.includes(targetOrigin(url, ports));
  } catch {
    return false;
  }
}

export type Released<T> = { ok: true; secret: T } | { ok: false; outcome: TransportOutcome };

/**
 * The one gate a secret resolved by name passes before anything connects: resolve it (at connect time, so
 * a rotated secret or binding applies to the next connection) and release it only for a target it is
 * bound to. An unknown name or a broken configuration is an `invalid-target`, a target the secret is not
 * bound to an `unbound-secret` (code `secret-not-bound`); both end the delivery rejected, nothing sent.
 */
export function releaseSecret<T>(kind: SecretKind<T>, name: string, url: string, resolve: (name: string) => T | undefined): Released<T> {
  const invalid = (message: string): Released<T> => ({ ok: false, outcome: { kind: 'invalid-target', message } });
  let secret: T | undefined;
  let origins: string[];
  try {
    secret = resolve(name);
    if (secret === undefined) return invalid(`this worker has no ${kind.label} named "${name}" (set ${kind.sources(name)})`);
    origins = parseBinding(kind.targetsOf(secret), kind);
  } catch (err) {
    return invalid(`the worker's ${kind.label} "${name}" is misconfigured: ${(err as Error).message}`);
  }
  if (bindingAllows(origins, url, kind.ports)) return { ok: true, secret };
  let target: string;
  try {
    target = targetOrigin(url, kind.ports);
  } catch (err) {
    return invalid(`${JSON.stringify(url)} ${(err as Error).message}`);
  }
  const hint = `If it is trusted, add it to "${kind.field}" in ${kind.sources(name)}`;
  return { ok: false, outcome: { kind: 'unbound-secret', secret: `${kind.label} "${name}"`, target, hint } };
}
