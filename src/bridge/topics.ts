import type { MessageKind } from '../delivery/types';

/*
 * Eclipse Hono's upstream topics (its MQTT adapter's user guide): what a device or gateway publishes, and
 * what the bridge reads tenant, device and kind from. Only the forms that name the tenant and the device in
 * the topic (unauthenticated devices, gateways): the authenticated-device forms (`telemetry`,
 * `command///res/…`) take them from the device's login to Hono, which a bridge reading a broker never sees.
 */

/** The first level of each kind's topics: Hono's long name and its short one. */
const PREFIXES: Record<string, MessageKind> = {
  telemetry: 'telemetry',
  t: 'telemetry',
  event: 'event',
  e: 'event',
  command: 'command-response',
  c: 'command-response',
};

/** A command response's fourth level: `res`, or Hono's short `s`. */
const RESPONSE_LEVELS = new Set(['res', 's']);

/** What the bridge subscribes to unless told otherwise: every upstream topic of Hono's layout that names tenant and device. */
export const HONO_UPSTREAM_FILTERS: readonly string[] = [
  'telemetry/+/+',
  't/+/+',
  'event/+/+',
  'e/+/+',
  // `command` or `c`, then `res` or `s`: Hono takes each short form on its own
  'command/+/+/res/+/+',
  'command/+/+/s/+/+',
  'c/+/+/res/+/+',
  'c/+/+/s/+/+',
];

/** The layout, in words, for messages. */
export const HONO_LAYOUT =
  'telemetry/<tenant>/<device>, event/<tenant>/<device> or command/<tenant>/<device>/res/<request id>/<status> (or the short t, e, c, s)';

export type TopicMapping =
  | { ok: true; kind: 'telemetry' | 'event'; tenant: string; device: string }
  | { ok: true; kind: 'command-response'; tenant: string; device: string; requestId: string; status: number }
  | { ok: false; reason: string };

/** A topic's kind, tenant and device (and a command response's request id and status), by Hono's layout. */
export function mapTopic(topic: string): TopicMapping {
  const [prefix = '', tenant = '', device = '', ...rest] = topic.split('/');
  const kind = PREFIXES[prefix];
  const refuse = (why: string): TopicMapping => ({ ok: false, reason: `${why}: the bridge reads ${HONO_LAYOUT}` });
  if (!kind) return refuse(`its first level ${JSON.stringify(prefix)} names no kind`);
  if (!tenant || !device) return refuse('it names no tenant or no device (the bridge never sees a device log in to Hono)');
  if (kind !== 'command-response') return rest.length === 0 ? { ok: true, kind, tenant, device } : refuse('it has levels after the device');
  const [level = '', requestId = '', status = '', ...more] = rest;
  if (!RESPONSE_LEVELS.has(level) || !requestId || more.length > 0) return refuse('it is not a command response');
  // a status Hono would pass on: three digits (the delivery checks it is 200-599)
  if (!/^\d{3}$/.test(status)) return refuse(`its status ${JSON.stringify(status)} is not an HTTP-style status code`);
  return { ok: true, kind, tenant, device, requestId, status: Number(status) };
}

/** The kinds whose topics a subscription's filter can match (`+` or `#` first: every kind). */
export function kindsOfFilter(filter: string): MessageKind[] {
  const first = filter.split('/')[0]!;
  if (first === '+' || first === '#') return ['telemetry', 'event', 'command-response'];
  const kind = PREFIXES[first];
  return kind ? [kind] : [];
}
