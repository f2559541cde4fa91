import { parseRetryAfter } from './retry-after';
import type { Classification, ClassOverrides, ErrorClass, TransportOutcome, Verdict } from './types';

const CLIENT_HTTP = new Set([400, 401, 403, 404, 405, 410, 413, 414, 415, 422]);

/** Classifies one attempt's outcome (SPEC §4). Pure: `now` dates HTTP-date hints. */
export function classify(outcome: TransportOutcome, overrides: ClassOverrides = {}, now = Date.now()): Classification {
  const base = classifyOutcome(outcome, now);
  const override = overrides[base.code];
  if (override === undefined || override === base.class) return base;
  return {
    ...base,
    class: override,
    retryable: override !== 'client' && override !== 'success',
    reason: `${base.reason} (treated as ${override} by this delivery's overrides)`,
  };
}

function classifyOutcome(outcome: TransportOutcome, now: number): Classification {
  switch (outcome.kind) {
    case 'http':
      return classifyHttp(outcome.status, outcome.headers ?? {}, now);
    case 'network':
      return verdict('connection', `net-${outcome.code}`, `no response: ${outcome.code}${outcome.message ? ` (${outcome.message})` : ''}`);
    case 'timeout':
      return verdict('connection', 'timeout', `no response within the attempt timeout of ${outcome.afterMs} ms`);
    case 'tls':
      return verdict('connection', `tls-${outcome.code}`, `TLS failure: ${outcome.code}${outcome.message ? ` (${outcome.message})` : ''}`);
    case 'invalid-target':
      return verdict('client', 'invalid-target', outcome.message);
  }
}

function classifyHttp(status: number, headers: Record<string, string | string[] | undefined>, now: number): Classification {
  const code = `http-${status}`;
  if (status >= 200 && status < 300) return verdict('success', code, `accepted with HTTP ${status}`);
  const header = headers['retry-after'];
  const retryAfterMs = parseRetryAfter(Array.isArray(header) ? header[0] : header, now);
  if (status === 429) return { ...verdict('well-known', code, 'too many requests: waiting for the server\'s Retry-After'), ...(retryAfterMs !== undefined && { retryAfterMs }) };
  if (status === 503 && retryAfterMs !== undefined) return { ...verdict('well-known', code, 'service unavailable with a Retry-After hint'), retryAfterMs };
  if (CLIENT_HTTP.has(status) || (status >= 400 && status < 500)) return verdict('client', code, `the request was refused with HTTP ${status}; an unchanged retry cannot succeed`);
  if (status >= 500) return verdict('server', code, `transient server failure HTTP ${status}`);
  return verdict('client', code, `unexpected HTTP ${status}`);
}

function verdict(cls: Verdict, code: string, reason: string): Classification {
  return { class: cls, retryable: cls !== 'client' && cls !== 'success', code, reason };
}

/** One stable Temporal failure type per class, so operators can filter and the workflow can decide. */
export const FAILURE_TYPES: Record<ErrorClass, string> = {
  client: 'DeliveryRejected',
  'well-known': 'DeliveryThrottled',
  server: 'DeliveryServerError',
  connection: 'DeliveryNoResponse',
};
