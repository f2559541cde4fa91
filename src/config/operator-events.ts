import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { BlockedAddressError, type AddressGuard } from '../transports/address-guard';
import { OPERATOR_TENANT } from '../delivery/ids';
import { releaseSecret } from '../transports/secret-binding';
import { SIGNING_SECRET, type SigningSecretResolver } from '../transports/signing';
import type { ConfigProblem, EnvReader } from './errors';

/** Where a worker sends operational events (docs/endpoint-health.md, "Operational events"), always signed. */
export interface OperatorEvents {
  /** The operator URLs: each event is a delivery (kind `event`) to each of them. */
  urls: readonly string[];
  /** The name of the signing secret they are signed with, resolved as any target's (docs/deliveries.md, "Signed requests"). */
  signing: string;
}

export const OPERATOR_URLS_ENV = 'REDELIVER_OPERATOR_URLS';
export const OPERATOR_SIGNING_ENV = 'REDELIVER_OPERATOR_SIGNING_SECRET';

/** What each problem names: the variables, or createWorker's option. */
export interface OperatorEventsFields {
  urls: string;
  signing: string;
}

const OPTION_FIELDS: OperatorEventsFields = { urls: 'operatorEvents.urls', signing: 'operatorEvents.signing' };

/** REDELIVER_OPERATOR_URLS (comma- or space-separated) and REDELIVER_OPERATOR_SIGNING_SECRET; null when no URL is set. */
export function readOperatorEvents(reader: EnvReader, resolve: SigningSecretResolver): OperatorEvents | null {
  const urls =
    reader
      .string(OPERATOR_URLS_ENV)
      ?.split(/[\s,]+/)
      .filter(Boolean) ?? [];
  const signing = reader.string(OPERATOR_SIGNING_ENV);
  if (urls.length === 0) {
    if (signing !== undefined)
      reader.problem(OPERATOR_SIGNING_ENV, `is set, but ${OPERATOR_URLS_ENV} is not: no operator URL to sign events for`);
    return null;
  }
  const events = { urls, signing: signing ?? '' };
  const fields = { urls: OPERATOR_URLS_ENV, signing: OPERATOR_SIGNING_ENV };
  for (const p of operatorEventsProblems(events, resolve, fields)) reader.problem(p.variable, p.message);
  return events;
}

/**
 * Operator URLs that an event could not be sent to, found before the worker starts: a URL that is not http(s),
 * no signing secret (events are always signed), or one this worker cannot resolve or that is not bound to a URL.
 */
export function operatorEventsProblems(
  events: OperatorEvents,
  resolve: SigningSecretResolver,
  fields: OperatorEventsFields = OPTION_FIELDS,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const urls = events.urls.filter((url) => {
    const ok = /^https?:$/.test(parsedUrl(url)?.protocol ?? '');
    if (!ok) problems.push({ variable: fields.urls, message: `${JSON.stringify(url)} is not an http(s) URL` });
    return ok;
  });
  if (!events.signing) {
    const example = '`operator` (its secret in REDELIVER_SIGNING_SECRETS_OPERATOR, bound to the operator URLs, "tenants": ["redeliver"])';
    problems.push({
      variable: fields.signing,
      message: `must name the signing secret operational events are signed with, e.g. ${example}`,
    });
    return problems;
  }
  for (const url of urls) {
    // events are the operator's deliveries: the secret must be for its tenant, as the worker checks at each request
    const released = releaseSecret(SIGNING_SECRET, events.signing, url, resolve, OPERATOR_TENANT);
    if (released.ok) continue;
    const o = released.outcome;
    const message =
      o.kind === 'unbound-secret'
        ? `${o.secret} is not bound to ${o.target}. ${o.hint}`
        : o.kind === 'foreign-secret'
          ? `${o.secret} is not for tenant "${o.tenant}", whose deliveries operational events are. ${o.hint}`
          : o.kind === 'invalid-target'
            ? o.message
            : o.kind;
    problems.push({ variable: fields.signing, message });
  }
  return problems;
}

/** The addresses a host name stands for: an IP literal itself, a name as the resolver answers now. */
export type ResolveHost = (host: string) => Promise<string[]>;

const resolveHost: ResolveHost = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

/**
 * Operator URLs whose host the SSRF guard refuses (REDELIVER_ALLOW_ADDRESSES), found at the worker's start: a
 * URL an operator mistyped, or was handed, to point at the metadata service or an internal host would otherwise
 * be sent a signed event about every failing endpoint. Names are resolved now; the guard checks again at each
 * connection (a name may change its answer). A name that does not resolve yet is left to that check.
 */
export async function operatorAddressProblems(
  events: OperatorEvents,
  guard: AddressGuard,
  field: string = OPTION_FIELDS.urls,
  resolve: ResolveHost = resolveHost,
): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  for (const url of events.urls) {
    const host = parsedUrl(url)?.hostname.replace(/^\[(.*)\]$/, '$1');
    if (!host) continue;
    const addresses = isIP(host) ? [host] : await resolve(host).catch(() => []);
    const refused = addresses.find((address) => guard.refusal(address));
    if (refused === undefined) continue;
    const why = new BlockedAddressError(host, refused, guard.refusal(refused)!).message;
    problems.push({
      variable: field,
      message: `${JSON.stringify(url)}: ${why}; open it in REDELIVER_ALLOW_ADDRESSES (allowed now: ${guard.describe()}) only if it is yours`,
    });
  }
  return problems;
}

function parsedUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}
