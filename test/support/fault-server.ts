import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
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
 * - `/garbage` answers with something that is not HTTP.
 */
export interface FaultServer {
  url: string;
  tlsUrl: string;
  received: Received[];
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

  return {
    url: `http://127.0.0.1:${port}`,
    tlsUrl: `https://127.0.0.1:${tlsPort}`,
    received,
    flushedBeforeReset,
    async close() {
      await Promise.all(
        [plain, tls].map((server) => {
          server.closeAllConnections();
          return new Promise<void>((resolve) => server.close(() => resolve()));
        }),
      );
    },
  };
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
