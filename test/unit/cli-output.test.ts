import { printable, printableFields } from '../../src/cli/output';

test('printable shows every character a terminal would act on as an escape, and leaves text alone', () => {
  expect(printable('\x1b]0;pwned\x07\x1b[2J')).toBe('\\x1b]0;pwned\\x07\\x1b[2J');
  expect(printable('ok\rfake\bx\x00\x7f')).toBe('ok\\x0dfake\\x08x\\x00\\x7f');
  // C1 controls (CSI as one code point) and bidi overrides that reorder what is shown
  expect(printable('a\u009b2Jb \u202egnp.exe\u202c \u2066x\u2069')).toBe('a\\x9b2Jb \\u202egnp.exe\\u202c \\u2066x\\u2069');
  expect(printable('one\ntwo\tthree')).toBe('one\\x0atwo\\x09three');
  expect(printable('one\ntwo', { keepNewlines: true })).toBe('one\ntwo');
  expect(printable('température 21,5 °C — 日本 ✓ \\x1b')).toBe('température 21,5 °C — 日本 ✓ \\x1b');
});

test('printableFields escapes every string of a record, newlines too, and keeps its shape', () => {
  const record = { id: 'a\nb', n: 3, nested: { reason: '\x1b[2J', list: ['\x07'] }, none: null };
  expect(printableFields(record)).toEqual({ id: 'a\\x0ab', n: 3, nested: { reason: '\\x1b[2J', list: ['\\x07'] }, none: null });
});
