import { interimVerdict } from '../../src/transports/interim';

const verdict = (text: string) => interimVerdict(Buffer.from(text, 'latin1'));
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

test('a 100 head is dropped, whole: with or without a reason phrase or headers, CRLF or bare LF', () => {
  expect(verdict(CONTINUE)).toEqual({ kind: 'drop', length: CONTINUE.length });
  expect(verdict(`${CONTINUE}HTTP/1.1 202 Accepted\r\n`)).toEqual({ kind: 'drop', length: CONTINUE.length });
  expect(verdict('HTTP/1.0 100\r\nX-Seen: 1\r\n\r\nrest')).toEqual({ kind: 'drop', length: 'HTTP/1.0 100\r\nX-Seen: 1\r\n\r\n'.length });
  expect(verdict('HTTP/1.1 100 Continue\n\n')).toEqual({ kind: 'drop', length: 'HTTP/1.1 100 Continue\n\n'.length });
});

test('other interim heads go on to undici, which skips them; the response is still to come', () => {
  const hints = 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n';
  expect(verdict(`${hints}HTTP/1.1 202`)).toEqual({ kind: 'interim', length: hints.length });
  expect(verdict('HTTP/1.1 102 Processing\r\n\r\n')).toEqual({ kind: 'interim', length: 'HTTP/1.1 102 Processing\r\n\r\n'.length });
});

test('an incomplete status line or head: wait for more', () => {
  for (const partial of ['', 'H', 'HTTP/1.1 10', 'HTTP/1.1 100 Continue', 'HTTP/1.1 100 Continue\r\n', 'HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n']) {
    expect(verdict(partial)).toEqual({ kind: 'more' });
  }
});

test('a final status, a 101 (an upgrade nobody asked for) or anything else is the response: passed on for undici to judge', () => {
  for (const start of ['HTTP/1.1 202 Accepted\r\n', 'HTTP/1.1 1000 Odd\r\n', 'HTTP/1.1 101 Switching Protocols\r\n', 'HELLO this is not HTTP\r\n', 'HTTP/2 100\r\n']) {
    expect(verdict(start)).toEqual({ kind: 'final' });
  }
});

test('a head that never ends is passed on once it is far longer than any real one', () => {
  expect(verdict(`HTTP/1.1 100 Continue\r\nX: ${'y'.repeat(20_000)}`)).toEqual({ kind: 'final' });
  expect(verdict('z'.repeat(20_000))).toEqual({ kind: 'final' });
});
