import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { errors } from 'undici';

/**
 * `100 Continue` responses, dropped before undici reads them.
 *
 * RFC 9110 §15.2: a client must parse interim (1xx) responses before the final one even when it did not
 * ask for them, and may ignore them. undici (6 and 7) skips 102 and 103 but tears the connection down on a
 * `100` it did not ask for (`Expect: 100-continue`, which its HTTP/1.1 client never sends): the attempt
 * failed as a reset ('bad response') though the receiver accepted the message in the 2xx that followed,
 * and was retried (issue 15, finding 8). So the agent's sockets drop `100` heads where a response begins:
 * in the bytes read after undici writes a request (its `undici:client:sendHeaders` diagnostics channel
 * says when), up to the head of the final response; other interim heads go on to undici as they are. A
 * response may have at most MAX_INTERIM_HEADS of them in front of it.
 */

/**
 * What bytes at the start of a response are: incomplete (`more`), a head to `drop` (a `100`), an `interim`
 * head undici handles itself (102, 103, …: passed on, and the response is still to come), or the start of
 * the `final` response (or of something undici is to refuse: passed on).
 */
export type InterimVerdict = { kind: 'more' } | { kind: 'drop' | 'interim'; length: number } | { kind: 'final' };

/** Far more than any status line or interim head: a server that sends more is left to undici to refuse. */
const MAX_HEAD_BYTES = 16 * 1024;
/**
 * Interim heads (of any 1xx) in front of one response. RFC 9110 sets no limit; servers send one or two.
 * More is a server spending the worker's CPU (each head is judged here, then parsed by undici), not
 * information: the response fails as a protocol error.
 */
export const MAX_INTERIM_HEADS = 16;
// `HTTP/1.x 1yz` and the byte after it: all of a status line that is read as text
const STATUS_PREFIX_BYTES = 13;
const INTERIM_LINE = /^HTTP\/1\.[01] (1(?!01)[0-9]{2})(?![0-9])/;
const LF = 0x0a;
const CR = 0x0d;

/** What the bytes at the start of a response are (pure). Reads as text only the start of the status line. */
export function interimVerdict(bytes: Buffer): InterimVerdict {
  const lineEnd = bytes.indexOf(LF);
  if (lineEnd < 0) return bytes.length > MAX_HEAD_BYTES ? { kind: 'final' } : { kind: 'more' };
  const status = INTERIM_LINE.exec(bytes.toString('latin1', 0, Math.min(lineEnd, STATUS_PREFIX_BYTES)))?.[1];
  if (status === undefined) return { kind: 'final' };
  const length = headLength(bytes, lineEnd);
  if (length !== undefined) return { kind: status === '100' ? 'drop' : 'interim', length };
  return bytes.length > MAX_HEAD_BYTES ? { kind: 'final' } : { kind: 'more' };
}

/** Where a head ends: after the first empty line (CRLF, or a bare LF as llhttp takes it too) within MAX_HEAD_BYTES. */
function headLength(bytes: Buffer, lineEnd: number): number | undefined {
  const limit = Math.min(bytes.length, MAX_HEAD_BYTES);
  for (let lf = lineEnd; lf >= 0 && lf < limit; lf = bytes.indexOf(LF, lf + 1)) {
    if (bytes[lf + 1] === LF) return lf + 2;
    if (bytes[lf + 1] === CR && bytes[lf + 2] === LF) return lf + 3;
  }
  return undefined;
}

/** More interim heads than MAX_INTERIM_HEADS: undici's own parser error, so that it is classified as one (`net-EPROTO`). */
function tooManyInterimHeads(): Error {
  const message = `more than ${MAX_INTERIM_HEADS} interim (1xx) responses before the final one`;
  return Object.assign(new errors.HTTPParserError(message), { code: 'HPE_TOO_MANY_INTERIM_RESPONSES' });
}

interface Watched {
  /** undici has written a request whose response has not begun yet. */
  awaiting: boolean;
  /** Bytes read from the socket but not yet handed to undici: the start of a response, not judged yet. */
  held: Buffer;
  /** Interim heads in front of the response awaited. */
  heads: number;
}

const watched = new WeakMap<object, Watched>();

subscribe('undici:client:sendHeaders', (message) => {
  const state = watched.get((message as { socket: object }).socket);
  if (state) {
    state.awaiting = true;
    state.heads = 0;
  }
});

/** Makes undici's reads of `socket` skip the `100 Continue` heads in front of each response. */
export function skipContinueResponses(socket: Socket): void {
  const state: Watched = { awaiting: false, held: Buffer.alloc(0), heads: 0 };
  watched.set(socket, state);
  const read = socket.read.bind(socket);
  // undici's parser reads with read() on 'readable'; read(n) is Node's own (read(0) to refill) and passes through
  socket.read = (size?: number) => (size === undefined && state.awaiting ? readGuarded(socket, state, () => read()) : read(size));
}

/** readResponseStart, failing the connection (and so the request on it, as undici's parser would) on a flood of heads. */
function readGuarded(socket: Socket, state: Watched, read: () => Buffer | null): Buffer | null {
  const bytes = readResponseStart(state, read);
  if (state.heads <= MAX_INTERIM_HEADS) return bytes;
  state.awaiting = false;
  state.held = Buffer.alloc(0);
  socket.destroy(tooManyInterimHeads());
  return null;
}

/**
 * The bytes undici may read now, with any `100` heads taken out; null when there are none yet (the socket
 * says 'readable' again when more arrive).
 */
function readResponseStart(state: Watched, read: () => Buffer | null): Buffer | null {
  const out: Buffer[] = [];
  for (;;) {
    const verdict = interimVerdict(state.held);
    if (verdict.kind === 'more') {
      const chunk = read();
      if (chunk === null) return out.length === 0 ? null : Buffer.concat(out);
      state.held = state.held.length === 0 ? chunk : Buffer.concat([state.held, chunk]);
      continue;
    }
    if (verdict.kind === 'final') {
      out.push(state.held);
      state.awaiting = false;
      state.held = Buffer.alloc(0);
      return Buffer.concat(out);
    }
    if (++state.heads > MAX_INTERIM_HEADS) return null;
    if (verdict.kind === 'interim') out.push(state.held.subarray(0, verdict.length));
    state.held = state.held.subarray(verdict.length);
  }
}
