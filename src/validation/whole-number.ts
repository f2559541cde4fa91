import type { Problem } from '../errors';

/**
 * A whole-number flag from `min` to `max`: digits only (no sign, fraction, exponent or hex, which Number()
 * would take), else a problem naming the flag, so that every bad flag is reported at once.
 */
export function wholeNumber(problems: Problem[], flag: string, value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of ${min} or more` : `from ${min} to ${max}`;
    problems.push({ field: flag, message: `must be a whole number ${range}, got ${JSON.stringify(value)}` });
  }
  return n;
}
