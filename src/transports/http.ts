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

const TLS_CODE = /^(CERT_|ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|HOSTNAME_MISMATCH)/;

/** Sends one HTTP request; never throws for what the network or server did: that is the outcome. */
export async function sendHttp(req: HttpRequest, dispatcher: Dispatcher): Promise<HttpAttempt> {
  const started = performance.now();
  const signal = AbortSignal.timeout(req.timeoutMs);
  try {
    const res = await request(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      dispatcher,
      signal,
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
    });
    // read the body so the connection can be reused, and so a reset mid-response is seen
    await res.body.dump({ limit: 1024 * 1024 });
    return { outcome: { kind: 'http', status: res.statusCode, headers: res.headers }, durationMs: performance.now() - started };
  } catch (err) {
    return { outcome: outcomeOfError(err, req.timeoutMs, signal.aborted), durationMs: performance.now() - started };
  }
}

function outcomeOfError(err: unknown, timeoutMs: number, timedOut: boolean): TransportOutcome {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (timedOut || e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return { kind: 'timeout', afterMs: timeoutMs };
  }
  const code = e.cause?.code ?? e.code ?? 'UNKNOWN';
  const message = e.cause?.message ?? e.message;
  if (TLS_CODE.test(code)) return { kind: 'tls', code, ...(message && { message }) };
  // undici reports a peer that closed the socket mid-exchange as UND_ERR_SOCKET ("other side closed")
  if (code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return { kind: 'network', code: 'ECONNRESET', ...(message && { message }) };
  if (code === 'ERR_INVALID_URL' || code === 'UND_ERR_INVALID_ARG') return { kind: 'invalid-target', message: message ?? 'invalid request' };
  return { kind: 'network', code, ...(message && { message }) };
}
