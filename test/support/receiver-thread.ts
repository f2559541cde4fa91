import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { ReceivedRequest } from './receiver';

/*
 * A loopback receiver on a thread of its own, for tests that measure when requests arrive at the endpoint.
 * The receiver of receiver.ts runs on the test's event loop beside the workers under test: a pause of that
 * loop (a garbage collection, a burst of workflow tasks) stamps the requests that arrived meanwhile all at
 * its end, as if they had come together. A thread has its own loop and heap, so its stamps are the arrivals.
 */

/** What a path answers: data, as a function cannot go to another thread. */
export interface ThreadRoute {
  status: number;
  delayMs: number;
  /** The first request of a message id ending in a multiple of `every` (`…-3`, `…-6`) is answered `status` instead. */
  firstFails?: { every: number; status: number };
}

/** One request as the thread saw it: headers in at `startedAt`, answer written at `endedAt`. */
export type ThreadRequest = Pick<ReceivedRequest, 'messageId' | 'attempt' | 'startedAt' | 'endedAt'>;

export interface ThreadReceiver {
  url: string;
  route(path: string, route: ThreadRoute): Promise<void>;
  requests(path: string): Promise<ThreadRequest[]>;
  close(): Promise<void>;
}

// plain JavaScript: the thread runs it as it is (the test's TypeScript is compiled for the test's thread only)
const THREAD = `
const { parentPort } = require('node:worker_threads');
const { createServer } = require('node:http');
const routes = new Map();
const log = new Map();
const seen = new Map();
const server = createServer((req, res) => {
  const startedAt = Date.now();
  req.resume();
  req.on('end', () => {
    const path = new URL(req.url, 'http://thread').pathname;
    const messageId = req.headers['message-id'];
    const attempt = req.headers['delivery-attempt'] ? Number(req.headers['delivery-attempt']) : undefined;
    const nth = (seen.get(path + '|' + messageId) ?? 0) + 1;
    seen.set(path + '|' + messageId, nth);
    const route = routes.get(path) ?? { status: 202, delayMs: 0 };
    const fails = route.firstFails && nth === 1 && Number(String(messageId).split('-').pop()) % route.firstFails.every === 0;
    const entry = { messageId, attempt, startedAt };
    if (!log.has(path)) log.set(path, []);
    log.get(path).push(entry);
    setTimeout(() => {
      entry.endedAt = Date.now();
      res.writeHead(fails ? route.firstFails.status : route.status, { 'content-type': 'text/plain' }).end('ok\\n');
    }, route.delayMs);
  });
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (m) => {
  if (m.route) routes.set(m.path, m.route);
  parentPort.postMessage({ id: m.id, requests: m.route ? undefined : log.get(m.path) ?? [] });
});
`;

export async function startThreadReceiver(): Promise<ThreadReceiver> {
  const thread = new Worker(THREAD, { eval: true });
  const [{ port }] = (await once(thread, 'message')) as [{ port: number }];
  let next = 0;
  const ask = async (message: object): Promise<ThreadRequest[]> => {
    const id = next++;
    thread.postMessage({ id, ...message });
    for (;;) {
      const [reply] = (await once(thread, 'message')) as [{ id: number; requests: ThreadRequest[] }];
      if (reply.id === id) return reply.requests;
    }
  };
  return {
    url: `http://127.0.0.1:${port}`,
    route: async (path, route) => void (await ask({ path, route })),
    requests: (path) => ask({ path }),
    close: async () => void (await thread.terminate()),
  };
}
