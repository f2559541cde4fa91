import { MAX_RETRY_AFTER_MS, classify, parseHttpDate, parseRetryAfter } from '../../src/classify';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0); // Thu, 15 Jan 2026 12:00:00 GMT

describe('parseRetryAfter', () => {
  test.each([
    ['120', 120_000],
    [' 5 ', 5_000],
    ['0', 0],
  ])('delta-seconds %j → %d ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  test.each([
    ['IMF-fixdate', 'Thu, 15 Jan 2026 12:01:30 GMT'],
    ['RFC 850', 'Thursday, 15-Jan-26 12:01:30 GMT'],
    ['asctime', 'Thu Jan 15 12:01:30 2026'],
  ])('an HTTP-date (%s) counts from now', (_, value) => {
    expect(parseRetryAfter(value, NOW)).toBe(90_000);
  });

  test.each([
    ['absent', undefined],
    ['a date in the past', 'Thu, 15 Jan 2026 11:59:59 GMT'],
    ['the present', 'Thu, 15 Jan 2026 12:00:00 GMT'],
    ['a negative number', '-5'],
    ['a fraction', '1.5'],
    ['words', 'soon'],
    ['empty', ''],
    ['ISO 8601, not an HTTP-date', '2026-01-15T12:01:30Z'],
    ['a zone other than GMT', 'Thu, 15 Jan 2026 12:01:30 UTC'],
    ['a day that does not exist', 'Sat, 31 Feb 2026 12:00:00 GMT'],
    ['an hour that does not exist', 'Thu, 15 Jan 2026 25:00:00 GMT'],
    ['what Date.parse would take', 'Jan 16 2026'],
  ])('%s is ignored', (_, value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  test('an absurdly long hint is cut to the maximum, in either form', () => {
    expect(parseRetryAfter('99999999999999999999', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Sat, 15 Jan 2050 12:00:00 GMT', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter(String(MAX_RETRY_AFTER_MS / 1000 - 1), NOW)).toBe(MAX_RETRY_AFTER_MS - 1000);
  });
});

describe('parseHttpDate', () => {
  test("RFC 9110's three example forms are the same instant", () => {
    const t = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(t);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(t);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW)).toBe(t);
  });

  test('a two-digit year more than 50 years ahead is in the past century', () => {
    expect(new Date(parseHttpDate('Monday, 01-Jan-76 00:00:00 GMT', NOW)!).getUTCFullYear()).toBe(2076);
    expect(new Date(parseHttpDate('Monday, 01-Jan-77 00:00:00 GMT', NOW)!).getUTCFullYear()).toBe(1977);
  });
});

describe('Retry-After in classify', () => {
  const at = (status: number, retryAfter: string) => classify({ kind: 'http', status, headers: { 'retry-after': retryAfter } }, {}, NOW);

  test('429 with a date waits until that date, and says so', () => {
    const c = at(429, 'Thu, 15 Jan 2026 12:02:00 GMT');
    expect(c).toMatchObject({ class: 'well-known', retryable: true, retryAfterMs: 120_000 });
    expect(c.reason).toContain('Retry-After: 120 s');
  });

  test('429 with garbage stays well-known, with no hint', () => {
    const c = at(429, 'tomorrow-ish');
    expect(c.class).toBe('well-known');
    expect(c).not.toHaveProperty('retryAfterMs');
    expect(c.reason).not.toContain('Retry-After:');
  });

  test('503 with a hint in the past is a generic server error', () => {
    const c = at(503, 'Thu, 15 Jan 2026 11:00:00 GMT');
    expect(c).toMatchObject({ class: 'server', retryable: true });
    expect(c).not.toHaveProperty('retryAfterMs');
  });

  test('a hint on a response that will not be retried is dropped', () => {
    expect(at(400, '30')).not.toHaveProperty('retryAfterMs');
    expect(at(202, '30')).not.toHaveProperty('retryAfterMs');
  });

  test('a hint on any retryable response is kept', () => {
    expect(at(500, '30')).toMatchObject({ class: 'server', retryAfterMs: 30_000 });
  });

  test('the header name is matched in any case, and the first of several values counts', () => {
    expect(classify({ kind: 'http', status: 503, headers: { 'Retry-After': '4' } }, {}, NOW).retryAfterMs).toBe(4_000);
    expect(classify({ kind: 'http', status: 503, headers: { 'retry-after': ['6', '60'] } }, {}, NOW).retryAfterMs).toBe(6_000);
  });
});
