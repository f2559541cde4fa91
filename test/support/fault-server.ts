import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';

const TLS_DIR = path.join(__dirname, '../fixtures/tls');

/** The self-signed certificate the TLS endpoint presents (for localhost and 127.0.0.1, valid until 2126). */
export const SELF_SIGNED_CERT = readFileSync(path.join(TLS_DIR, 'localhost.crt'));

/** Flushed before a reset: more than the kernel's socket buffers on both ends hold, so the client was reading. */
export const RESET_AFTER_BYTES = 64 * 1024 * 1024;

export interface Received {
  path: string;
  messageId: string | undefined;
  body: string;
}

/**
 * A loopback endpoint that misbehaves on request, over HTTP and over TLS with a self-signed certificate:
 *
 * - `/status/<code>?retry-after=<value>&body=<text>` answers with that status, header and body;
 * - `/hang` reads the request and never answers;
 * - `/stall` starts a 202 and never finishes its body;
 * - `/cut` starts a 202 and closes the connection (FIN) halfway through the body;
 * - `/reset-early` resets the connection (RST) instead of answering;
 * - `/reset` starts a 202, streams a body until {@link RESET_AFTER_BYTES} are flushed, then resets (RST);
 * - `/garbage` answers with something that is not HTTP;
 * - `/trickle` starts a 202 with a 1000-byte body and sends it at 1 byte/s;
 * - `/endless` starts a chunked 202 and sends a chunk every 100 ms, forever.
 *
 * `interimUrl` is a raw HTTP/1.1 server for interim (1xx) responses, byte for byte ({@link INTERIM_ROUTES}).
 * It answers every request after reading it whole and keeps the connection open; its TLS port
 * (`https://` to `interimUrl`) never answers a ClientHello: a handshake that never ends.
 */
export interface FaultServer {
  url: string;
  tlsUrl: string;
  interimUrl: string;
  received: Received[];
  /** Requests the interim server read, with the number of the connection each came on (from 1). */
  interimReceived: (Received & { connection: number })[];
  /** Bytes `/reset` had flushed when it reset, per message id. */
  flushedBeforeReset: Map<string, number>;
  close(): Promise<void>;
}

export async function startFaultServer(): Promise<FaultServer> {
  const received: Received[] = [];
  const flushedBeforeReset = new Map<string, number>();

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const messageId = req.headers['message-id'] as string | undefined;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: url.pathname, messageId, body: Buffer.concat(chunks).toString('utf8') });
      const status = /^\/status\/(\d{3})$/.exec(url.pathname);
      if (status) {
        const retryAfter = url.searchParams.get('retry-after');
        res.writeHead(Number(status[1]), retryAfter === null ? {} : { 'retry-after': retryAfter });
        res.end(url.searchParams.get('body') ?? '');
      } else if (url.pathname === '/stall') {
        res.writeHead(202, { 'content-length': '1000' });
        res.write('partial');
      } else if (url.pathname === '/cut') {
        res.writeHead(202, { 'content-length': '1000' });
        res.write('partial', () => req.socket.destroy());
      } else if (url.pathname === '/reset-early') {
        req.socket.resetAndDestroy();
      } else if (url.pathname === '/reset') {
        streamThenReset(req, res, (flushed) => flushedBeforeReset.set(messageId ?? '', flushed));
      } else if (url.pathname === '/garbage') {
        req.socket.end('HELLO this is not HTTP\r\n\r\n');
      } else if (url.pathname === '/trickle') {
        res.writeHead(202, { 'content-length': '1000' });
        every(res, 1_000, () => res.write('x'));
      } else if (url.pathname === '/endless') {
        res.writeHead(202);
        every(res, 100, () => res.write('more'));
      } else if (url.pathname !== '/hang') {
        res.writeHead(404).end();
      }
    });
  };

  const plain = http.createServer(handle);
  const tls = https.createServer({ cert: SELF_SIGNED_CERT, key: readFileSync(path.join(TLS_DIR, 'localhost.key')) }, handle);
  const listen = (server: http.Server) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const [port, tlsPort] = await Promise.all([listen(plain), listen(tls)]);
  const interim = await startInterimServer();

  return {
    url: `http://127.0.0.1:${port}`,
    tlsUrl: `https://127.0.0.1:${tlsPort}`,
    interimUrl: interim.url,
    received,
    interimReceived: interim.received,
    flushedBeforeReset,
    async close() {
      await Promise.all([
        interim.close(),
        ...[plain, tls].map((server) => {
          server.closeAllConnections();
          return new Promise<void>((resolve) => server.close(() => resolve()));
        }),
      ]);
    },
  };
}

/** Runs `write` every `intervalMs` until the response closes. */
function every(res: ServerResponse, intervalMs: number, write: () => void): void {
  const timer = setInterval(write, intervalMs);
  res.once('close', () => clearInterval(timer));
}

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
const EARLY_HINTS = 'HTTP/1.1 103 Early Hints\r\nLink: </hints.css>; rel=preload; as=style\r\n\r\n';
const PROCESSING = 'HTTP/1.1 102 Processing\r\n\r\n';
const ACCEPTED = 'HTTP/1.1 202 Accepted\r\ncontent-length: 8\r\n\r\naccepted';

/**
 * The interim server's paths: what it writes to answer each. An array is written one byte per write, a
 * millisecond apart, so that the client reads the heads in pieces; `repeat` is written every 250 ms,
 * forever (at most 8 heads in a 2 s attempt: under the client's limit of 16 per response, so the attempt
 * runs into its timeout); `flood` as fast as the client reads it, forever.
 */
export const INTERIM_ROUTES: Record<string, string | string[] | { repeat: string } | { flood: string }> = {
  '/continue': CONTINUE + ACCEPTED,
  '/early-hints': EARLY_HINTS + ACCEPTED,
  '/interim-bytewise': [...(CONTINUE + EARLY_HINTS + CONTINUE + ACCEPTED)],
  '/processing': { repeat: PROCESSING },
  '/continue-forever': { repeat: CONTINUE },
  '/continue-flood': { flood: CONTINUE },
};

async function startInterimServer() {
  const received: (Received & { connection: number })[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    const timers: NodeJS.Timeout[] = [];
    socket.once('close', () => {
      sockets.delete(socket);
      timers.forEach(clearInterval);
    });
    socket.on('error', () => undefined);
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (let request = takeRequest(buffered); request; request = takeRequest(buffered)) {
        buffered = buffered.subarray(request.length);
        received.push({ path: request.path, messageId: request.messageId, body: request.body, connection });
        const answer = INTERIM_ROUTES[request.path] ?? 'HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n';
        if (typeof answer === 'string') socket.write(answer);
        else if (Array.isArray(answer)) writeSlowly(socket, answer);
        else if ('flood' in answer) flood(socket, answer.flood);
        else timers.push(setInterval(() => socket.write(answer.repeat), 250));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        sockets.forEach((s) => s.destroy());
        server.close(() => resolve());
      }),
  };
}

/** One whole request at the start of `bytes` (head and content-length body), or null while it is incomplete. */
function takeRequest(bytes: Buffer): { path: string; messageId: string | undefined; body: string; length: number } | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const [requestLine = '', ...fields] = bytes.toString('latin1', 0, headEnd).split('\r\n');
  const header = (name: string) =>
    fields
      .find((f) => f.toLowerCase().startsWith(`${name}:`))
      ?.slice(name.length + 1)
      .trim();
  const length = headEnd + 4 + Number(header('content-length') ?? 0);
  if (bytes.length < length) return null;
  return {
    path: requestLine.split(' ')[1] ?? '/',
    messageId: header('message-id'),
    body: bytes.toString('utf8', headEnd + 4, length),
    length,
  };
}

/** Writes `text` again and again, as fast as the peer reads it, until the socket closes. */
function flood(socket: net.Socket, text: string): void {
  const chunk = Buffer.from(text.repeat(Math.ceil(16_384 / text.length)));
  const pump = () => {
    while (!socket.destroyed && socket.write(chunk));
    if (!socket.destroyed) socket.once('drain', pump);
  };
  pump();
}

function writeSlowly(socket: net.Socket, pieces: string[]): void {
  const [piece, ...rest] = pieces;
  if (piece === undefined || socket.destroyed) return;
  socket.write(piece, () => setTimeout(() => writeSlowly(socket, rest), 1));
}

function streamThenReset(req: IncomingMessage, res: ServerResponse, onReset: (flushed: number) => void): void {
  const chunk = Buffer.alloc(256 * 1024);
  let queued = 0;
  let flushed = 0;
  res.writeHead(202, { 'content-length': String(RESET_AFTER_BYTES * 4) });
  const pump = () => {
    while (queued < RESET_AFTER_BYTES) {
      queued += chunk.length;
      const more = res.write(chunk, () => {
        flushed += chunk.length;
        if (flushed >= RESET_AFTER_BYTES && !req.socket.destroyed) {
          onReset(flushed);
          req.socket.resetAndDestroy();
        }
      });
      if (!more) return void res.once('drain', pump);
    }
  };
  pump();
}
