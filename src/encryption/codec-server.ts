import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /**
   * The secret every /encode and /decode request must carry, as `Authorization: Bearer <token>` (the
   * Temporal CLI's `--codec-auth`, a proxy) or as the first segment of the path, `/<token>/decode`: the
   * Temporal UI's codec endpoint is a URL, and the UI adds an Authorization header only with the access
   * token of its own sign-on, over https. At least 16 letters, digits, `-`, `_`, `.` or `~`. Required.
   */
  token: string;
  /** Interface to listen on. Default 127.0.0.1: an operator's browser or a reverse proxy reaches it, nobody else. */
  host?: string;
  /** Default 8888; 0 picks a free port. */
  port?: number;
  /**
   * Origins whose pages may call the server from a browser: the Temporal UI's, e.g. `http://localhost:8080`.
   * A request from any other origin is refused. Default none: only non-browser callers (the Temporal CLI).
   */
  corsOrigins?: readonly string[];
  /**
   * Host names requests may be addressed to besides `localhost`, the loopback addresses and the address it
   * listens on: the names a browser or a proxy reaches it by. Any other `Host` is refused, so that a page
   * whose own name an attacker re-points at this server (DNS rebinding) cannot use it.
   */
  allowedHosts?: readonly string[];
  /** Largest request body, in bytes. Default 8 MiB. */
  maxBodyBytes?: number;
}

export interface CodecServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** What a codec token may be: it travels in a URL path too, so nothing that needs escaping. */
export const CODEC_TOKEN = /^[A-Za-z0-9._~-]{16,256}$/;
export const CODEC_TOKEN_RULE = 'must be 16 to 256 letters, digits, "-", "_", "." or "~" (e.g. `openssl rand -hex 32`)';

/**
 * A Temporal remote codec server: `POST /encode` and `POST /decode` take and return `{"payloads": [...]}`
 * in protobuf JSON (metadata values and data base64), as the Temporal UI and CLI send them. Whoever holds
 * the token reads every message: it is refused to requests without it, to requests addressed to a name
 * that is not the server's, and to pages of other origins than the UI's.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const guard = requestGuard(options);
  const maxBody = options.maxBodyBytes ?? 8 * 1024 * 1024;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => send(res, 500, { message: err instanceof Error ? err.message : String(err) }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refused = guard.refusal(req);
    if (refused) return send(res, refused.status, { message: refused.message });
    guard.allowCors(req, res);
    const { path, authorized } = guard.route(req);
    if (req.method === 'OPTIONS') return send(res, req.headers.origin ? 204 : 403);
    if (req.method === 'GET' && path === '/health') return send(res, 200, { status: 'ok' });
    if (path !== '/encode' && path !== '/decode') return send(res, 404, { message: 'POST /encode or /decode' });
    if (req.method !== 'POST') return send(res, 405, { message: 'POST only' });
    if (!authorized) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      const message = 'missing or wrong token: send `Authorization: Bearer <token>` or call /<token>/decode (REDELIVER_CODEC_TOKEN)';
      return send(res, 401, { message });
    }
    await convert(req, res, path);
  }

  async function convert(req: IncomingMessage, res: ServerResponse, path: '/encode' | '/decode'): Promise<void> {
    let payloads: Payload[];
    try {
      const body = JSON.parse(await readBody(req, maxBody)) as { payloads?: unknown };
      if (!Array.isArray(body.payloads)) return send(res, 400, { message: 'the body must be {"payloads": [...]}' });
      payloads = body.payloads.map(fromJson);
    } catch (err) {
      return send(res, (err as { status?: number }).status ?? 400, {
        message: `the body must be {"payloads": [...]}: ${(err as Error).message}`,
      });
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
    url: `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The checks every request passes before it is served: its Host, its Origin, its token. */
function requestGuard(options: CodecServerOptions) {
  if (!CODEC_TOKEN.test(options.token ?? '')) throw new Error(`token: ${CODEC_TOKEN_RULE}`);
  const origins = new Set((options.corsOrigins ?? []).map(originOf));
  const listening = options.host && !['0.0.0.0', '::'].includes(options.host) ? [options.host] : [];
  const hosts = new Set(['localhost', '127.0.0.1', '::1', ...listening, ...(options.allowedHosts ?? [])].map(hostnameOf));
  const token = digest(options.token);
  return {
    refusal(req: IncomingMessage): { status: number; message: string } | undefined {
      const host = req.headers.host === undefined ? '' : hostnameOf(req.headers.host);
      if (!hosts.has(host)) {
        const given = JSON.stringify(req.headers.host ?? '');
        return {
          status: 403,
          message: `Host ${given} is not a name of this server (${[...hosts].join(', ')}); add it to REDELIVER_CODEC_ALLOWED_HOSTS`,
        };
      }
      const origin = req.headers.origin;
      if (origin !== undefined && !origins.has(origin)) {
        const allowed = [...origins].join(', ') || 'none';
        return {
          status: 403,
          message: `Origin ${JSON.stringify(origin)} may not call this server; allowed: ${allowed} (REDELIVER_CODEC_CORS_ORIGINS)`,
        };
      }
      return undefined;
    },
    allowCors(req: IncomingMessage, res: ServerResponse): void {
      const origin = req.headers.origin;
      if (origin === undefined) return;
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
      res.setHeader('Vary', 'Origin');
    },
    /** The route without the token in front, and whether the request carried the token (in its path or as a bearer). */
    route(req: IncomingMessage): { path: string; authorized: boolean } {
      const raw = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
      const segments = raw.split('/').filter(Boolean);
      const inPath = segments.length === 2 && timingSafeEqual(digest(segments[0]!), token);
      const path = segments.length === 2 ? `/${segments[1]}` : raw;
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      return { path, authorized: inPath || (bearer !== undefined && timingSafeEqual(digest(bearer), token)) };
    },
  };
}

/** A host name as a Host header or an option gives it, lower case, without port, brackets or a final dot. */
function hostnameOf(value: string): string {
  const v = value.trim().toLowerCase();
  const name = v.startsWith('[') ? v.slice(1, v.indexOf(']')) : v.split(':').length === 2 ? v.split(':')[0]! : v;
  return name.replace(/\.$/, '');
}

function originOf(value: string): string {
  if (value === '*' || value === 'null') {
    throw new Error(`corsOrigins: ${JSON.stringify(value)} is not an origin; list the Temporal UI's origins, e.g. http://localhost:8080`);
  }
  try {
    return new URL(value).origin;
  } catch {
    throw new Error(`corsOrigins: ${JSON.stringify(value)} is not an origin such as http://localhost:8080`);
  }
}

/** Compared as digests: equal length, so timingSafeEqual says nothing about the token's length either. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
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
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  };
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
