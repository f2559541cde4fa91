/** Parses `Retry-After` (delta-seconds or HTTP-date) to ms from `now`; undefined when absent, past or garbage. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (!Number.isFinite(date) || !/[a-z]/i.test(text)) return undefined;
  const ms = date - now;
  return ms > 0 ? ms : undefined;
}
