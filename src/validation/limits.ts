import { z } from 'zod';
import { deliveryIdOf, OPERATOR_TENANT } from '../delivery/ids';
import type { Problem } from '../errors';

// What submit bounds and refuses so that a delivery's first attempt never fails for a reason visible at
// submit, and what it stores stays small (docs/deliveries.md, "A delivery's fields"). Shared by deliveries and
// command subscriptions.

/**
 * Tenants, devices, command request ids, subscription client ids: 128 characters each keep the workflow id
 * `delivery/<tenant>/<device>/<messageId>` (at most 427 bytes) well under Temporal's 1,000-byte id limit.
 */
export const MAX_ID_LENGTH = 128;
/** A message id: room for the `response-<requestId>` a command subscription gives its responses. */
export const MAX_MESSAGE_ID_LENGTH = 160;
/** The longest delivery id submit accepts (427): the HTTP API reads and controls every one. */
export const MAX_DELIVERY_ID_LENGTH = deliveryIdOf(
  't'.repeat(MAX_ID_LENGTH),
  'd'.repeat(MAX_ID_LENGTH),
  'm'.repeat(MAX_MESSAGE_ID_LENGTH),
).length;
/** Target and callback URLs: 8 KiB, the request line most HTTP servers accept. */
export const MAX_URL_BYTES = 8 * 1024;
/** A target's own headers: at most 64, 8 KiB in all (`name: value` lines), far below servers' 16 KiB+ header limits. */
export const MAX_HEADERS = 64;
export const MAX_HEADER_BYTES = 8 * 1024;
export const MAX_CONTENT_TYPE_LENGTH = 256;
/** An mqtts target's CA certificate(s) in PEM: a chain of a dozen certificates. */
export const MAX_CA_BYTES = 32 * 1024;

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

const ID_RULE = 'must be printable ASCII, without control characters: it is part of the workflow id and is sent in headers';

/**
 * An id: part of the workflow id (and so of every search and UI link), sent in HTTP headers
 * (`message-id`, a subscription's `tenant`, `device`, `command-request-id`) and MQTT topics. Printable
 * ASCII only: a header cannot carry control characters, and non-ASCII would be mangled on the way.
 */
export function idSchema(what: string, max = MAX_ID_LENGTH) {
  return z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : `must be a string (the ${what})`) })
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `must be at most ${max} characters` })
    .regex(/^[^\s/+#]*$/, { error: 'must not contain whitespace, "/", "+" or "#"' })
    .regex(/^[\x21-\x7e]*$/, { error: ID_RULE });
}

/** The tenant of redeliver's own operational events (`Tenant = "redeliver"` lists them): no producer's, no API key's. */
export const RESERVED_TENANT = OPERATOR_TENANT;
export const RESERVED_TENANT_RULE = `must not be "${RESERVED_TENANT}": that tenant is reserved for redeliver's own operational events`;

/** A tenant a producer or an API key names: an id, and not the reserved one. */
export const tenantSchema = () => idSchema('tenant').refine((tenant) => tenant !== RESERVED_TENANT, { error: RESERVED_TENANT_RULE });

/** An RFC 9110 token (a header's name). */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** An RFC 9110 field value as redeliver takes it: printable ASCII and tabs. */
export const FIELD_VALUE = /^[\t\x20-\x7e]*$/;
const VALUE_RULE =
  'must be printable ASCII or tabs: no CR, LF or other control characters, and no non-ASCII characters (RFC 9110 field value)';
const NAME_RULE = "is not a valid header name (RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~)";

/** The body's type (`contentType`): sent as the Content-Type header, or the MQTT 5 content type. */
export const contentTypeSchema = z
  .string({ error: 'must be a string (a media type such as "application/json")' })
  .min(1, { error: 'must not be empty' })
  .max(MAX_CONTENT_TYPE_LENGTH, { error: `must be at most ${MAX_CONTENT_TYPE_LENGTH} characters` })
  .regex(FIELD_VALUE, { error: VALUE_RULE });

const HOP_BY_HOP = 'is a hop-by-hop header: the HTTP client sets it for each connection';
const FRAMING = 'is a framing header: the HTTP client sets it from the body';
/** Headers a producer may not set (lower case), and why: refused at submit rather than failed, or retried for days. */
const REFUSED_HEADERS = new Map<string, string>([
  ['connection', HOP_BY_HOP],
  ['keep-alive', HOP_BY_HOP],
  ['proxy-connection', HOP_BY_HOP],
  ['proxy-authorization', HOP_BY_HOP],
  ['proxy-authenticate', HOP_BY_HOP],
  ['te', HOP_BY_HOP],
  ['trailer', HOP_BY_HOP],
  ['upgrade', HOP_BY_HOP],
  ['http2-settings', HOP_BY_HOP],
  ['transfer-encoding', 'is a hop-by-hop framing header: the HTTP client sets it from the body'],
  ['content-length', FRAMING],
  ['expect', FRAMING],
  // a Host of its own would send the request to one endpoint in the name of another
  ['host', 'comes from the target URL'],
  ['content-type', 'is given by contentType (one place for HTTP and MQTT)'],
  ['webhook-id', 'is reserved for Standard Webhooks signatures'],
  ['webhook-timestamp', 'is reserved for Standard Webhooks signatures'],
  ['webhook-signature', 'is reserved for Standard Webhooks signatures'],
]);
/** The headers no producer may set, whoever sets them instead (lower case). */
export const REFUSED_HEADER_NAMES = [...REFUSED_HEADERS.keys()];
/** Set by redeliver on every delivery attempt (deliveryHeaders). */
export const DELIVERY_HEADERS = ['message-id', 'delivery-attempt', 'qos-level'] as const;
/** Set by redeliver on every command handed to a subscription's callback (docs/mqtt.md, "Command subscriptions"). */
export const COMMAND_HEADERS = [
  'content-type',
  'message-id',
  'delivery-attempt',
  'command-name',
  'command-topic',
  'command-request-id',
  'tenant',
  'device',
] as const;

/** Every problem with a target's or callback's own headers, each naming its header (`target.headers.X-Name`). */
export function headerProblems(headers: Record<string, string>, field: string, owned: readonly string[]): Problem[] {
  const entries = Object.entries(headers);
  if (entries.length > MAX_HEADERS) return [{ field, message: `has ${entries.length} headers, over the limit of ${MAX_HEADERS}` }];
  const problems: Problem[] = [];
  const total = entries.reduce((sum, [name, value]) => sum + bytes(`${name}: ${value}`), 0);
  if (total > MAX_HEADER_BYTES) problems.push({ field, message: `are ${total} bytes, over the limit of ${MAX_HEADER_BYTES} bytes` });
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    // a name that is no token may hold CR/LF or be huge: quoted and cut short in the field's name
    const at = TOKEN.test(name) ? `${field}.${name}` : `${field}[${JSON.stringify(name.slice(0, 64))}]`;
    const refusal = owned.includes(lower) ? 'is set by redeliver on every attempt' : REFUSED_HEADERS.get(lower);
    if (!TOKEN.test(name)) problems.push({ field: at, message: NAME_RULE });
    else if (refusal) problems.push({ field: at, message: refusal });
    else if (seen.has(lower)) problems.push({ field: at, message: 'is given more than once (header names are case-insensitive)' });
    if (!FIELD_VALUE.test(value)) problems.push({ field: at, message: VALUE_RULE });
    seen.add(lower);
  }
  return problems;
}

/**
 * Checks a URL's text and parses it; never quotes it (it may hold a password). A URL parser drops tabs and
 * newlines silently, reads `http:///x` as `http://x/` and `http://@host` as `http://host`: the text is
 * checked before it is parsed. `url` is undefined when nothing more can be said about it (too long, no
 * URL, another scheme); `userInfo` says where credentials go instead.
 */
export function parseTargetUrl(text: string, schemes: readonly string[], userInfo: string): { url?: URL; problems: string[] } {
  const size = bytes(text);
  if (size > MAX_URL_BYTES) return { problems: [`is ${size} bytes, over the limit of ${MAX_URL_BYTES} bytes`] };
  if (/[\u0000-\u001f\u007f]/.test(text)) {
    return { problems: ['must not contain control characters (tabs and newlines included): percent-encode them'] };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problems: ['is not a valid URL'] };
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!schemes.includes(scheme)) return { problems: [`scheme "${scheme}" is not supported; use ${schemes.join(' or ')}`] };
  const authority = /^\s*[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\\]*)/.exec(text)?.[1];
  const problems: string[] = [];
  if (!authority || !url.hostname) problems.push(`must name a host: ${scheme}://host[:port]`);
  else if (authority.includes('@')) problems.push(`must not carry a user name or password: ${userInfo}`);
  if (url.port === '0') problems.push('must not use port 0, which cannot be connected to');
  return { url, problems };
}

/** Bytes of a value as the workflow's input stores it: JSON (Temporal's default payload converter), UTF-8. */
export function storedBytes(value: unknown): number {
  return bytes(JSON.stringify(value) ?? '');
}

/**
 * The problem with a delivery whose stored form (body JSON-escaped, target, everything) is over `limit`:
 * its largest parts named, so the producer sees what to cut.
 */
export function storedSizeProblem(delivery: Record<string, unknown>, limit: number): Problem | undefined {
  const total = storedBytes(delivery);
  if (total <= limit) return undefined;
  const parts = Object.entries(delivery)
    .map(([key, value]) => [key === 'body' ? 'payload' : key, storedBytes(value)] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([key, size]) => `${key} ${size}`);
  return { field: '(delivery)', message: `is ${total} bytes as stored, over the limit of ${limit} bytes (${parts.join(', ')})` };
}
