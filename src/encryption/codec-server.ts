import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Interface to listen on. Default 127.0.0.1: an operator's browser or a reverse proxy reaches it, nobody else. */
  host?: string;
  /** Default 8888; 0 picks a free port. */
  port?: number;
  /**
   * Origins whose pages may call the server from a browser: the Temporal UI's, e.g. `http://localhost:8080`.
   * `*` allows any origin (without credentials). Default none: only non-browser callers (the Temporal CLI).
   */
  corsOrigins?: readonly string[];
  /**
   * When set, every /encode and /decode request must carry exactly this `Authorization` header value
   * (the UI sends it with "include cross-origin credentials" / its own access token; the CLI with
   * `--codec-auth`). Checked in constant time.
   */
  authorization?: string;
  /** Largest request body, in bytes. Default 8 MiB. */
  maxBodyBytes?: number;
}

export interface CodecServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * A Temporal remote codec server: `POST /encode` and `POST /decode` take and return `{"payloads": [...]}`
 * in protobuf JSON (metadata values and data base64), as the Temporal UI and CLI send them. The UI shows
 * decrypted payloads to whoever can reach this server (and holds the authorization it demands); put it
 * behind your single sign-on for operators who may see message bodies.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const origins = new Set(options.corsOrigins ?? []);
  const maxBody = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const expected = options.authorization === undefined ? undefined : Buffer.from(options.authorization);

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => send(res, 500, { message: err instanceof Error ? err.message : String(err) }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = req.headers.origin;
    if (origin && (origins.has(origin) || origins.has('*'))) {
      res.setHeader('Access-Control-Allow-Origin', origins.has(origin) ? origin : '*');
      if (origins.has(origin)) res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
      res.setHeader('Vary', 'Origin');
    }
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (req.method === 'OPTIONS') return send(res, origin && res.hasHeader('Access-Control-Allow-Origin') ? 204 : 403);
    if (req.method === 'GET' && path === '/health') return send(res, 200, { status: 'ok' });
    if (path !== '/encode' && path !== '/decode') return send(res, 404, { message: 'POST /encode or /decode' });
    if (req.method !== 'POST') return send(res, 405, { message: 'POST only' });
    if (expected && !authorized(req.headers.authorization, expected)) return send(res, 401, { message: 'missing or wrong Authorization' });

    let body: { payloads?: unknown };
    try {
      body = JSON.parse(await readBody(req, maxBody)) as { payloads?: unknown };
    } catch (err) {
      return send(res, (err as { status?: number }).status ?? 400, { message: `the body must be {"payloads": [...]}: ${(err as Error).message}` });
    }
    if (!Array.isArray(body.payloads)) return send(res, 400, { message: 'the body must be {"payloads": [...]}' });
    let payloads: Payload[];
    try {
      payloads = body.payloads.map(fromJson);
    } catch (err) {
      return send(res, 400, { message: (err as Error).message });
    }
    try {
      const result = path === '/encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
      send(res, 200, { payloads: result.map(toJson) });
    } catch (err) {
      // a payload this server cannot decrypt (another key) is the caller's problem, not the server's
      send(res, 400, { message: (err as Error).message });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8888, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface PayloadJson {
  metadata?: Record<string, string>;
  data?: string;
}

function fromJson(value: unknown): Payload {
  const p = value as PayloadJson | null;
  if (!p || typeof p !== 'object') throw new Error('each payload must be an object');
  const metadata: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(p.metadata ?? {})) {
    if (typeof v !== 'string') throw new Error(`payload metadata ${k} must be base64`);
    metadata[k] = Buffer.from(v, 'base64');
  }
  return { metadata, data: Buffer.from(typeof p.data === 'string' ? p.data : '', 'base64') };
}

function toJson(p: Payload): PayloadJson {
  return {
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  };
}

function authorized(given: string | undefined, expected: Buffer): boolean {
  const actual = Buffer.from(given ?? '');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(Object.assign(new Error(`over ${limit} bytes`), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
