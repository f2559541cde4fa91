import { parseRetryAfter } from './retry-after';
import { CLASSIFICATION_TABLE, FAMILY, MQTT5_FAMILY_WHEN, RETRY_AFTER_WHEN, type ClassificationRow } from './table';
import type { Classification, ClassOverrides, ErrorClass, TransportOutcome, Verdict } from './types';

/** Every code `classify` can return; delivery validation accepts override keys of this shape only. */
export const STABLE_CODE =
  /^(http-\d{3}|mqtt-0x[0-9a-f]{2}|mqtt3-connack-0x[0-9a-f]{2}|mqtt-sent|mqtt-no-puback|mqtt-closed|net-[A-Z0-9_]+|tls-[A-Z0-9_]+|timeout|invalid-target|ssrf-blocked|secret-not-bound|secret-not-for-tenant)$/;

/**
 * One stable Temporal failure type per class, so operators can filter and the workflow can decide.
 * Recorded histories and saved filters hold these names: never rename one.
 */
export const FAILURE_TYPES: Record<ErrorClass, string> = {
  client: 'DeliveryRejected',
  'well-known': 'DeliveryThrottled',
  server: 'DeliveryServerError',
  connection: 'DeliveryNoResponse',
};

/**
 * A first attempt that ends its delivery without being sent: no room at the endpoint before the delivery
 * expires (the endpoint's limits, passLimits). Never retried; the workflow ends the delivery with the outcome it carries.
 */
export const UNSENT_TYPE = 'DeliveryUnsent';

/** Longest piece of server-provided text (an error body, a reason string) a reason quotes. */
const MAX_QUOTE = 200;

const ROWS = new Map(CLASSIFICATION_TABLE.map((row) => [key(row.code, row.when), row]));

/**
 * Classifies one attempt's outcome (docs/spec.md §4, docs/error-classification.md), then applies the delivery's
 * overrides. Pure: `now` dates an HTTP-date Retry-After.
 */
export function classify(outcome: TransportOutcome, overrides: ClassOverrides = {}, now = Date.now()): Classification {
  const base = classifyOutcome(outcome, now);
  const override = overrides[base.code];
  if (override === undefined || override === base.class) return base;
  const { retryAfterMs, ...rest } = base;
  const retryable = isRetryable(override);
  return {
    ...rest,
    class: override,
    retryable,
    reason: `${base.reason} (treated as ${override} by this delivery's overrides)`,
    ...(retryable && retryAfterMs !== undefined && { retryAfterMs }),
  };
}

/** What the row says, filled in for this outcome. */
interface Match {
  code: string;
  row: ClassificationRow;
  vars?: Record<string, string>;
  /** Server-provided detail, quoted after the sentence. */
  notes?: (string | undefined)[];
  retryAfterMs?: number;
  prefix?: string;
}

function classifyOutcome(outcome: TransportOutcome, now: number): Classification {
  const m = match(outcome, now);
  const vars = m.vars ?? {};
  const sentence = m.row.reason.replace(/\{(\w+)\}/g, (whole, name: string) => vars[name] ?? whole);
  const notes = (m.notes ?? []).filter((n): n is string => !!n);
  const retryable = isRetryable(m.row.class);
  return {
    class: m.row.class,
    retryable,
    code: m.code,
    reason: `${m.prefix ?? ''}${sentence}${notes.length ? ` (${notes.join('; ')})` : ''}`,
    ...(retryable && m.retryAfterMs !== undefined && { retryAfterMs: m.retryAfterMs }),
  };
}

function match(outcome: TransportOutcome, now: number): Match {
  switch (outcome.kind) {
    case 'http':
      return matchHttp(outcome.status, outcome.headers ?? {}, outcome.detail, now);
    case 'mqtt-error-topic':
      return { ...matchHttp(outcome.status, {}, outcome.message, now), prefix: "Hono's MQTT adapter reported on the error topic: " };
    case 'mqtt5': {
      const hex = hex2(outcome.reasonCode);
      const packet = outcome.packet.toUpperCase();
      // below 0x80 is success, but only a PUBACK acknowledges a message (and a SUBACK a subscription):
      // elsewhere the attempt just ended
      if (outcome.reasonCode < 0x80 && outcome.packet !== 'puback' && outcome.packet !== 'suback')
        return { code: 'mqtt-closed', row: row('mqtt-closed'), notes: [`${packet} ${hex}`] };
      const code = `mqtt-${hex}`;
      const family = outcome.reasonCode < 0x80 ? MQTT5_FAMILY_WHEN.success : MQTT5_FAMILY_WHEN.failure;
      return {
        code,
        row: ROWS.get(key(code)) ?? row(FAMILY.mqtt5, family),
        vars: { packet, code: hex },
        notes: [said('reason string: ', outcome.reasonString), said('server reference: ', outcome.serverReference)],
      };
    }
    case 'mqtt3-connack': {
      const code = `mqtt3-connack-${hex2(outcome.returnCode)}`;
      return { code, row: ROWS.get(key(code)) ?? row(FAMILY.mqtt3Connack), vars: { code: hex2(outcome.returnCode) } };
    }
    case 'mqtt-sent':
      return { code: 'mqtt-sent', row: row('mqtt-sent') };
    case 'mqtt-no-puback':
      return { code: 'mqtt-no-puback', row: row('mqtt-no-puback'), vars: { timeout: String(outcome.afterMs) } };
    case 'mqtt-closed':
      return { code: 'mqtt-closed', row: row('mqtt-closed'), notes: [said('', outcome.message)] };
    case 'network': {
      const code = `net-${outcome.code}`;
      return { code, row: ROWS.get(key(code)) ?? row(FAMILY.network), vars: { code: outcome.code }, notes: [said('', outcome.message)] };
    }
    case 'tls': {
      const code = `tls-${outcome.code}`;
      return { code, row: ROWS.get(key(code)) ?? row(FAMILY.tls), vars: { code: outcome.code }, notes: [said('', outcome.message)] };
    }
    case 'timeout':
      return { code: 'timeout', row: row('timeout'), vars: { timeout: String(outcome.afterMs) } };
    case 'invalid-target':
      return { code: 'invalid-target', row: row('invalid-target'), notes: [said('', outcome.message)] };
    case 'blocked-address':
      return {
        code: 'ssrf-blocked',
        row: row('ssrf-blocked'),
        vars: { address: outcome.address, range: outcome.range, description: outcome.description },
        notes: [outcome.host === outcome.address ? undefined : said('', `${outcome.host} resolves to it`)],
      };
    case 'unbound-secret':
      return {
        code: 'secret-not-bound',
        row: row('secret-not-bound'),
        vars: { secret: outcome.secret, target: outcome.target, hint: outcome.hint },
      };
    case 'foreign-secret':
      return {
        code: 'secret-not-for-tenant',
        row: row('secret-not-for-tenant'),
        vars: { secret: outcome.secret, tenant: outcome.tenant, hint: outcome.hint },
      };
  }
}

function matchHttp(status: number, headers: Record<string, string | string[] | undefined>, detail: string | undefined, now: number): Match {
  const code = `http-${status}`;
  const retryAfterMs = parseRetryAfter(header(headers, 'retry-after'), now);
  const when = status === 503 ? (retryAfterMs === undefined ? RETRY_AFTER_WHEN.without : RETRY_AFTER_WHEN.with) : undefined;
  const family =
    status >= 200 && status < 300
      ? FAMILY.http2xx
      : status >= 300 && status < 400
        ? FAMILY.http3xx
        : status >= 400 && status < 500
          ? FAMILY.http4xx
          : FAMILY.http5xx;
  const hint = retryAfterMs === undefined ? undefined : `Retry-After: ${Math.ceil(retryAfterMs / 1000)} s`;
  return {
    code,
    row: ROWS.get(key(code, when)) ?? row(family),
    vars: { status: String(status) },
    notes: [hint, said('the endpoint said: ', detail)],
    retryAfterMs,
  };
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const entry = Object.entries(headers).find(([k]) => k.toLowerCase() === name);
  const value = entry?.[1];
  return Array.isArray(value) ? value[0] : value;
}

function row(code: string, when?: string): ClassificationRow {
  const found = ROWS.get(key(code, when));
  if (!found) throw new Error(`the classification table has no row for ${code}${when ? ` (${when})` : ''}`);
  return found;
}

function key(code: string, when?: string): string {
  return when ? `${code} | ${when}` : code;
}

function isRetryable(verdict: Verdict): boolean {
  return verdict !== 'client' && verdict !== 'success';
}

function hex2(n: number): string {
  return `0x${n.toString(16).padStart(2, '0')}`;
}

/** Server text goes into workflow histories and the UI: one line, bounded. */
function said(label: string, text: string | undefined): string | undefined {
  const line = text?.replace(/\s+/g, ' ').trim();
  if (!line) return undefined;
  return label + (line.length > MAX_QUOTE ? `${line.slice(0, MAX_QUOTE - 1)}…` : line);
}
