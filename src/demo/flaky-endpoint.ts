import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the endpoint saw it. */
export interface ReceivedRequest {
  path: string;
  messageId: string | undefined;
  attempt: number | undefined;
  status: number;
  at: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface FlakyEndpoint {
  url: string;
  server: Server;
  received: ReceivedRequest[];
  /** While a path is down, every request to it gets a 503, whatever its query says. */
  setDown(path: string, down: boolean): void;
  close(): Promise<void>;
}

/**
 * A local HTTP endpoint whose faults are scripted by the URL's query, per message id:
 * `?fail=2&status=503` answers 503 to the first two requests of a message, then `then` (default 202);
 * `status=503,429` answers those in turn; `retryAfter=S` adds a Retry-After header to the failures; `status=400` with `fail=99` always refuses.
 */
export async function startFlakyEndpoint(port = 0, host = '127.0.0.1'): Promise<FlakyEndpoint> {
  const received: ReceivedRequest[] = [];
  const seen = new Map<string, number>();
  const down = new Set<string>();
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const url = new URL(req.url ?? '/', 'http://endpoint');
      const messageId = header(req, 'message-id');
      const key = `${url.pathname}|${messageId ?? ''}`;
      const count = (seen.get(key) ?? 0) + 1;
      seen.set(key, count);
      const failures = Number(url.searchParams.get('fail') ?? 0);
      const failing = count <= failures || down.has(url.pathname);
      // a list of statuses is answered in turn: `status=503,429` alternates a server error and throttling
      const statuses = (url.searchParams.get('status') ?? '503').split(',').map(Number);
      const status = failing ? statuses[(count - 1) % statuses.length]! : Number(url.searchParams.get('then') ?? 202);
      const headers: Record<string, string> = { 'content-type': 'text/plain' };
      const retryAfter = url.searchParams.get('retryAfter');
      if (failing && retryAfter) headers['retry-after'] = retryAfter;
      const attempt = header(req, 'delivery-attempt');
      received.push({
        path: url.pathname,
        messageId,
        attempt: attempt ? Number(attempt) : undefined,
        status,
        at: Date.now(),
        body,
        headers: req.headers,
      });
      res.writeHead(status, headers).end(failing ? 'scripted failure\n' : 'accepted\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: actual } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${actual}`,
    server,
    received,
    setDown: (path, isDown) => void (isDown ? down.add(path) : down.delete(path)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
