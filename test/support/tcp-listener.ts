import net from 'node:net';
import tls from 'node:tls';

/**
 * A raw TCP listener that answers nothing and counts the connections made to it, with the bytes they sent
 * (an MQTT CONNECT starts with 0x10): an SSRF target, or a broker an attacker names. With `tls` it completes
 * a TLS handshake with that certificate first, and `received` is what came through it.
 */
export interface TcpListener {
  host: string;
  port: number;
  /** Connections made to it, its own probes left out. */
  connections: number;
  /** What the connections sent, in order of arrival (decrypted, with `tls`). */
  received: Buffer[];
  /** `scheme://host:port`, the IPv6 host in brackets. */
  url(scheme: string): string;
  /**
   * The connection count once every connection started before this call has been accepted: a probe of
   * its own goes through the same accept queue behind them, so no sleep has to guess how long that takes.
   */
  settled(): Promise<number>;
  close(): Promise<void>;
}

/** Listens on `host` (an IP literal) at a free port; undefined when the host has no such address (no IPv6). */
export async function startTcpListener(
  host = '127.0.0.1',
  options: { tls?: tls.SecureContextOptions } = {},
): Promise<TcpListener | undefined> {
  const sockets = new Set<net.Socket>();
  /** The client port of every connection accepted; the probes' are left out of the count. */
  const accepted: number[] = [];
  const probes = new Set<number>();
  let arrived = () => undefined as void;
  const listener = { host, port: 0, received: [] as Buffer[] } as unknown as TcpListener;
  Object.defineProperty(listener, 'connections', { get: () => accepted.filter((p) => !probes.has(p)).length });
  const server = net.createServer((raw) => {
    sockets.add(raw);
    raw.on('close', () => sockets.delete(raw));
    raw.on('error', () => undefined);
    accepted.push(raw.remotePort ?? -1);
    const socket = options.tls ? new tls.TLSSocket(raw, { isServer: true, ...options.tls }) : raw;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => listener.received.push(chunk));
    arrived();
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, resolve);
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL' || (err as NodeJS.ErrnoException).code === 'EAFNOSUPPORT') return undefined;
    throw err;
  }
  listener.port = (server.address() as net.AddressInfo).port;
  listener.url = (scheme) => `${scheme}://${host.includes(':') ? `[${host}]` : host}:${listener.port}`;
  listener.settled = async () => {
    const probe = net.connect({ host, port: listener.port });
    await new Promise<void>((resolve, reject) => probe.once('connect', resolve).once('error', reject));
    probes.add(probe.localPort!);
    while (!accepted.includes(probe.localPort!)) await new Promise<void>((resolve) => (arrived = resolve));
    probe.destroy();
    return listener.connections;
  };
  listener.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return listener;
}
