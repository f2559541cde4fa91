import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthServer {
  url: string;
  close(): Promise<void>;
}

/**
 * `GET /healthz`: 200 while the worker polls (state RUNNING), 503 once it stops, drains or fails — what a
 * container health check or a Kubernetes liveness probe asks. The body names the state.
 */
export async function startHealthServer(bindAddress: string, state: () => string): Promise<HealthServer> {
  const at = bindAddress.lastIndexOf(':');
  const host = bindAddress.slice(0, at).replace(/^\[|\]$/g, '') || '0.0.0.0';
  const port = Number(bindAddress.slice(at + 1));
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || !['/healthz', '/'].includes((req.url ?? '/').split('?')[0]!)) {
      res.writeHead(404).end();
      return;
    }
    const now = state();
    res.writeHead(now === 'RUNNING' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ state: now }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  return {
    url: `http://${bound.address.includes(':') ? `[${bound.address}]` : bound.address}:${bound.port}/healthz`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
