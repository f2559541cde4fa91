import { Agent, request, type Dispatcher } from 'undici';
import type { TransportOutcome } from '../classify/types';

export interface HttpRequest {
  url: string;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  body: string;
  /** The whole attempt (connect, send, response headers and body) must finish within this. */
  timeoutMs: number;
}

export interface HttpAttempt {
  outcome: TransportOutcome;
  durationMs: number;
}

/** A keep-alive connection pool shared by the attempts of one worker. */
export function createHttpAgent(options: Agent.Options = {}): Dispatcher {
  return new Agent({ keepAliveTimeout: 10_000, connections: 64, ...options });
}

/** Bytes of an error response's body kept for the reason (Hono explains its 4xx and 5xx there). */
const ERROR_DETAIL_BYTES = 512;

/**
 * Sends one HTTP request; never throws for what the network or server did: that is the outcome.
 * A response counts only once its body has arrived in full: a 202 whose body breaks off is a broken
 * connection, not a delivery.
 */
export async function sendHttp(req: HttpRequest, dispatcher: Dispatcher): Promise<HttpAttempt> {
  const started = performance.now();
  // one deadline for the whole attempt; undici's own per-phase timeouts are longer and never fire first
  const signal = AbortSignal.timeout(req.timeoutMs);
  const done = (outcome: TransportOutcome): HttpAttempt => ({ outcome, durationMs: performance.now() - started });
  try {
    const res = await request(req.url, { method: req.method, headers: req.headers, body: req.body, dispatcher, signal });
    const detail = await readBody(res.body, res.statusCode >= 400 ? ERROR_DETAIL_BYTES : 0);
    return done({ kind: 'http', status: res.statusCode, headers: res.headers, ...(detail && { detail }) });
  } catch (err) {
    return done(outcomeOfError(err, req.timeoutMs, signal.aborted));
  }
}

/** Reads the body to its end (so a break is seen, and the connection can be reused), keeping its first bytes. */
async function readBody(body: AsyncIterable<Buffer>, keep: number): Promise<string | undefined> {
  const kept: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < keep) kept.push(chunk.subarray(0, keep - size));
    size += chunk.length;
  }
  const text = Buffer.concat(kept).toString('utf8').trim();
  return text || undefined;
}

// Node's and OpenSSL's certificate and handshake codes (tls.TLSSocket authorizationError, ERR_SSL_*)
const TLS_CODE = /^(CERT_|ERR_TLS_|ERR_SSL_|ERR_OSSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|INVALID_CA|HOSTNAME_MISMATCH)/;

/**
 * undici's own codes, as the Node network codes an operator knows (observed against real servers, see
 * test/activities): the peer closing mid-exchange is "other side closed", a response that is not
 * HTTP is an llhttp parser error.
 */
function networkCode(code: string): string {
  if (code === 'UND_ERR_SOCKET') return 'ECONNRESET';
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'ETIMEDOUT';
  if (code.startsWith('HPE_')) return 'EPROTO';
  return code;
}

function outcomeOfError(err: unknown, timeoutMs: number, timedOut: boolean): TransportOutcome {
  const e = err as { code?: unknown; name?: string; message?: string; cause?: { code?: unknown; message?: string } };
  if (timedOut || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return { kind: 'timeout', afterMs: timeoutMs };
  const rawCode = typeof e.cause?.code === 'string' ? e.cause.code : typeof e.code === 'string' ? e.code : 'UNKNOWN';
  const message = e.cause?.message ?? e.message;
  if (rawCode === 'ERR_INVALID_URL' || rawCode === 'UND_ERR_INVALID_ARG') return { kind: 'invalid-target', message: message ?? 'invalid request' };
  if (TLS_CODE.test(rawCode)) return { kind: 'tls', code: rawCode, ...(message && { message }) };
  return { kind: 'network', code: networkCode(rawCode), ...(message && { message }) };
}
