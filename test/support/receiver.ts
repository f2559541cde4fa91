import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a route does with one request. */
export type Reply =
  /** Answer with this status after `delayMs` (default 0), with a Retry-After header and a body if given. */
  | { status: number; delayMs?: number; retryAfter?: string; body?: string }
  /** Reset the connection (RST) after `delayMs`, without an answer. */
  | { reset: true; delayMs?: number };

/** One request as the receiver saw it, and what became of its answer. */
export interface ReceivedRequest {
  path: string;
  messageId: string | undefined;
  attempt: number | undefined;
  body: string;
  headers: IncomingHttpHeaders;
  /** Epoch ms when the request's body had arrived. */
  at: number;
  /** Epoch ms when its headers arrived, and when its answer was written (or it was reset or lost): the request was in flight between. */
  startedAt: number;
  endedAt?: number;
  reply: Reply;
  /**
   * What the client was sent: the status once the answer was written in full to an open socket;
   * `reset`; `lost` when the client had gone before the (late) answer.
   */
  outcome: number | 'reset' | 'lost' | 'pending';
}

export interface RequestInfo {
  path: string;
  query: URLSearchParams;
  messageId: string | undefined;
  attempt: number | undefined;
  /** How many requests this path has had for this message id, this one included. */
  nth: number;
}

export type Route = (req: RequestInfo) => Reply;

/**
 * A loopback receiver scripted per path: each request's answer comes from the path's route (a
 * function of the message id, its attempt number and how many times this id was seen), and every
 * request is logged with what the client got. Unknown paths answer 202.
 */
export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  route(path: string, route: Route): void;
  /** The requests that carried this message id. */
  of(messageId: string): ReceivedRequest[];
  /** Message ids that were answered 2xx in full: what the receiver holds as delivered. */
  accepted(): Set<string>;
  /** The same, in the order of each one's first such answer (its first successful arrival). */
  firstAccepted(): string[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const routes = new Map<string, Route>();
  const seen = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const startedAt = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://receiver');
      const messageId = header(req, 'message-id');
      const attemptHeader = header(req, 'delivery-attempt');
      const key = `${url.pathname}|${messageId ?? ''}`;
      const nth = (seen.get(key) ?? 0) + 1;
      seen.set(key, nth);
      const info: RequestInfo = {
        path: url.pathname,
        query: url.searchParams,
        messageId,
        attempt: attemptHeader ? Number(attemptHeader) : undefined,
        nth,
      };
      const reply: Reply = (routes.get(url.pathname) ?? accept)(info);
      const entry: ReceivedRequest = {
        path: info.path,
        messageId,
        attempt: info.attempt,
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
        at: Date.now(),
        startedAt,
        reply,
        outcome: 'pending',
      };
      requests.push(entry);
      const answer = () => {
        timers.delete(timer);
        entry.endedAt = Date.now();
        if (req.socket.destroyed) return void (entry.outcome = 'lost');
        if ('reset' in reply) {
          entry.outcome = 'reset';
          return void req.socket.resetAndDestroy();
        }
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...(reply.retryAfter && { 'retry-after': reply.retryAfter }) });
        // written in full to an open socket; a client that gave up before then never had the answer
        res.end(reply.body ?? (reply.status < 300 ? 'accepted\n' : 'scripted failure\n'), () => (entry.outcome = reply.status));
        res.once('close', () => {
          if (entry.outcome === 'pending') entry.outcome = 'lost';
        });
      };
      const timer = setTimeout(answer, reply.delayMs ?? 0);
      timers.add(timer);
    });
  };

  const server: Server = createServer(handle);
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const firstAccepted = () => [
    ...new Set(requests.filter((r) => typeof r.outcome === 'number' && r.outcome < 300).map((r) => r.messageId!)),
  ];
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    route: (path, route) => void routes.set(path, route),
    of: (messageId) => requests.filter((r) => r.messageId === messageId),
    accepted: () => new Set(firstAccepted()),
    firstAccepted,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const accept: Route = () => ({ status: 202 });

/** The most requests the receiver had in flight at once (from headers in to answer out). */
export function mostInFlight(requests: readonly Pick<ReceivedRequest, 'startedAt' | 'endedAt'>[]): number {
  const events = requests.flatMap((r) => [
    { at: r.startedAt, step: 1 },
    { at: r.endedAt ?? Infinity, step: -1 },
  ]);
  // an answer and a request at the same millisecond: the answer first (the place was free again)
  events.sort((a, b) => a.at - b.at || a.step - b.step);
  let now = 0;
  let most = 0;
  for (const e of events) most = Math.max(most, (now += e.step));
  return most;
}

/** The most requests that arrived within any `windowMs` (a window starting at each arrival). */
export function mostInWindow(requests: readonly Pick<ReceivedRequest, 'startedAt'>[], windowMs = 1_000): number {
  const times = requests.map((r) => r.startedAt).sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < times.length; last++) {
    while (times[last]! - times[first]! >= windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export interface RandomFaultOptions {
  seed: string;
  /** Shares of the answers; the rest is 202. */
  serverError: number;
  reset: number;
  /** Answers (202) that come only after `slowMs`, past the attempt timeout: the client gives up on them. */
  slow: number;
  slowMs: number;
}

/**
 * A route that fails at random — 500/502/503/504, connection resets, answers slower than the attempt
 * timeout — and otherwise accepts. The draw is a hash of (seed, message id, attempt number), not of
 * arrival order, so a run can be replayed whatever the concurrency.
 */
export function randomFaults(options: RandomFaultOptions): Route {
  const codes = [500, 502, 503, 504];
  return ({ messageId, attempt, nth }) => {
    const digest = createHash('sha256')
      .update(`${options.seed}|${messageId}|${attempt ?? nth}`)
      .digest();
    const draw = digest.readUInt32BE(0) / 2 ** 32;
    if (draw < options.serverError) return { status: codes[digest[4]! % codes.length]! };
    if (draw < options.serverError + options.reset) return { reset: true };
    if (draw < options.serverError + options.reset + options.slow) return { status: 202, delayMs: options.slowMs };
    return { status: 202 };
  };
}
