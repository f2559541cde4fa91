/**
 * The longest hint taken at its word. Longer ones are cut to this so that no absurd number travels on;
 * the delivery's own bounds (max age, deadline) then decide whether waiting makes sense at all.
 */
export const MAX_RETRY_AFTER_MS = 30 * 24 * 3600 * 1000;

/**
 * Parses `Retry-After` (RFC 9110 §10.2.3: delta-seconds or an HTTP-date) into ms from `now`.
 * Undefined when absent, in the past, negative, or anything but those two forms: a hint is never guessed at.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const date = parseHttpDate(text, now);
  if (date === undefined || date <= now) return undefined;
  return Math.min(date - now, MAX_RETRY_AFTER_MS);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = MONTHS.join('|');
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// RFC 9110 §5.6.7: recipients accept all three; Date.parse would accept far more, so it is not used
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** An HTTP-date in epoch ms, or undefined when it is not one. */
export function parseHttpDate(text: string, now: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = RFC850_DATE.exec(text);
  if (m) {
    // a two-digit year more than 50 years ahead means the most recent past year with those digits
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(m[3]);
    if (year > thisYear + 50) year -= 100;
    return utc(year, m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  }
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  return undefined;
}

function utc(year: number, month: string, day: number, hh: string, mm: string, ss: string): number | undefined {
  const monthIndex = MONTHS.indexOf(month);
  const [h, min, s] = [Number(hh), Number(mm), Number(ss)];
  if (h > 23 || min > 59 || s > 60) return undefined;
  const t = Date.UTC(year, monthIndex, day, h, min, Math.min(s, 59));
  // Date.UTC rolls 31 Feb over into March: such a date is garbage, not a date
  return new Date(t).getUTCDate() === day ? t : undefined;
}
