import { channel } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { classify } from '../../src/classify';
import { outcomeOfError } from '../../src/transports/http';
import { interimVerdict, skipContinueResponses } from '../../src/transports/interim';

const verdict = (text: string) => interimVerdict(Buffer.from(text, 'latin1'));
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
const EARLY_HINTS = 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n';
const ACCEPTED = 'HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n';

/**
 * A socket as undici reads it (read() on 'readable'), giving one of `reads` per read(), with the filter on
 * it; `request()` is undici writing a request on it (which its diagnostics channel tells).
 */
function socketReading(reads: string[]) {
  const socket = {
    read: (_size?: number): Buffer | null => (reads.length ? Buffer.from(reads.shift()!, 'latin1') : null),
    destroy: jest.fn(),
  };
  skipContinueResponses(socket as unknown as Socket);
  const request = () => channel('undici:client:sendHeaders').publish({ socket });
  /** What undici reads until there is nothing more. */
  const readAll = () => {
    let text = '';
    for (let b = socket.read(); b !== null; b = socket.read()) text += b.toString('latin1');
    return text;
  };
  request();
  return { socket, reads, request, readAll };
}

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
  for (const partial of [
    '',
    'H',
    'HTTP/1.1 10',
    'HTTP/1.1 100 Continue',
    'HTTP/1.1 100 Continue\r\n',
    'HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n',
  ]) {
    expect(verdict(partial)).toEqual({ kind: 'more' });
  }
});

test('a final status, a 101 (an upgrade nobody asked for) or anything else is the response: passed on for undici to judge', () => {
  for (const start of [
    'HTTP/1.1 202 Accepted\r\n',
    'HTTP/1.1 1000 Odd\r\n',
    'HTTP/1.1 101 Switching Protocols\r\n',
    'HELLO this is not HTTP\r\n',
    'HTTP/2 100\r\n',
  ]) {
    expect(verdict(start)).toEqual({ kind: 'final' });
  }
});

test('a head that never ends is passed on once it is far longer than any real one', () => {
  expect(verdict(`HTTP/1.1 100 Continue\r\nX: ${'y'.repeat(20_000)}`)).toEqual({ kind: 'final' });
  expect(verdict('z'.repeat(20_000))).toEqual({ kind: 'final' });
});

test('judging a head reads no more of it as text than the start of its status line', () => {
  // a read may bring kilobytes of heads: each one judged must not cost a conversion of all of them
  const bytes = Buffer.from(CONTINUE.repeat(600), 'latin1');
  const toString = jest.spyOn(Buffer.prototype, 'toString');
  try {
    expect(interimVerdict(bytes)).toEqual({ kind: 'drop', length: CONTINUE.length });
    const converted = toString.mock.calls.reduce((sum, [, start = 0, end = bytes.length]) => sum + (Number(end) - Number(start)), 0);
    expect(converted).toBeLessThanOrEqual(16);
  } finally {
    toString.mockRestore();
  }
});

describe('at most 16 interim heads in front of one response', () => {
  test('16, in one read or many, then the response: passed on without the 100s', () => {
    expect(socketReading([CONTINUE.repeat(16) + ACCEPTED]).readAll()).toBe(ACCEPTED);
    expect(socketReading([...Array<string>(8).fill(CONTINUE + EARLY_HINTS), ACCEPTED]).readAll()).toBe(EARLY_HINTS.repeat(8) + ACCEPTED);
  });

  test('the count starts again with each response on a kept-alive connection', () => {
    const { socket, reads, request, readAll } = socketReading([CONTINUE.repeat(10) + ACCEPTED]);
    expect(readAll()).toBe(ACCEPTED);
    reads.push(CONTINUE.repeat(10) + ACCEPTED);
    request();
    expect(readAll()).toBe(ACCEPTED);
    expect(socket.destroy).not.toHaveBeenCalled();
  });

  test.each([
    ['100 Continue', [CONTINUE.repeat(17)]],
    ['100 Continue, one per read', Array<string>(17).fill(CONTINUE)],
    ['103 Early Hints', [EARLY_HINTS.repeat(17) + ACCEPTED]],
  ])('a 17th (%s) fails the connection as a protocol error, classified as undici parse errors are', (_, reads) => {
    const { socket, readAll } = socketReading(reads);
    expect(readAll()).toBe('');
    expect(socket.destroy).toHaveBeenCalledTimes(1);
    const err = socket.destroy.mock.calls[0]![0] as Error;
    expect(err.message).toMatch(/more than 16 interim/);
    expect(classify(outcomeOfError(err, 10_000, false))).toMatchObject({ class: 'connection', code: 'net-EPROTO', retryable: true });
  });
});
