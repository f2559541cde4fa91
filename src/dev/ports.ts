import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A TCP port free on loopback right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether `port` on loopback can be listened on right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port from `from` to `to` free on loopback right now, tried at random. */
export async function freePortIn(from: number, to: number): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (await portFree(port)) return port;
  }
  throw new Error(`no free port on 127.0.0.1 from ${from} to ${to}`);
}

/**
 * A free port for a server that must keep it, across a restart too: below the range the kernel hands out
 * to outgoing connections and to port-0 listens (Linux's ip_local_port_range), so neither can take it
 * between the pick and the listen, nor while the server is down. Elsewhere, a port like freePort's.
 */
export async function freeServerPort(): Promise<number> {
  const ephemeralFrom = ephemeralRangeStart();
  return ephemeralFrom === undefined || ephemeralFrom <= 10_000 ? freePort() : freePortIn(10_000, ephemeralFrom - 1);
}

/** The first port of the kernel's ephemeral range, where the system says it. */
function ephemeralRangeStart(): number | undefined {
  try {
    const from = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(from) && from > 0 ? from : undefined;
  } catch {
    return undefined;
  }
}
