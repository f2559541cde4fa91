import { Agent, buildConnector, DecoratorHandler, request, type Dispatcher } from 'undici';
import { isIP } from 'node:net';
import type { TransportOutcome } from '../classify/types';
import { AddressGuard, BlockedAddressError, checkPeer, describeRefusal, guardedLookup, type LookupFunction } from './address-guard';
import { attemptDeadline } from './deadline';
import { skipContinueResponses } from './interim';

export interface HttpRequest {
  url: string;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  body: string;
  /** The whole attempt (connect, send, response headers and body) must finish within this. */
  timeoutMs: number;
  /** Ends the attempt early (the worker handing it back at shutdown); the outcome is then a timeout. */
  signal?: AbortSignal;
}

export interface HttpAttempt {
  outcome: TransportOutcome;
  durationMs: number;
}

export interface HttpAgentOptions extends Agent.Options {
  /**
   * The SSRF guard's allow-list: blocked ranges (loopback, private, …) or CIDRs that attempts may reach
   * anyway (docs/deploying.md, "SSRF guard"). Default: none — only public addresses.
   */
  allow?: AddressGuard | string | readonly string[];
}

/**
 * A keep-alive connection pool shared by the attempts of one worker. It opens a connection whenever every
 * open one is busy (no limit of its own): an attempt never waits in the pool behind others, where its
 * deadline would run out before it was sent. What bounds the sends is the worker's activity slots, the
 * batches' lanes (SendLanes) and the endpoint's own limits. Every connection it opens goes
 * through the SSRF guard: the address it connects to — an IP literal, or each address a name resolves to
 * (with `connect.lookup` if given, else DNS) — must be public or allowed. Its connections skip the
 * `100 Continue` responses undici would take for a broken connection (skipContinueResponses).
 */
export function createHttpAgent(options: HttpAgentOptions = {}): Dispatcher {
  const { allow, connect, connectTimeout, ...rest } = options;
  if (typeof connect === 'function')
    throw new Error('createHttpAgent: pass connect options, not a connector: a connector of its own would bypass the SSRF guard');
  const guard = allow instanceof AddressGuard ? allow : AddressGuard.parse(allow, 'allow');
  return new Agent({
    keepAliveTimeout: 10_000,
    ...rest,
    connect: guardedConnector(guard, { ...(connectTimeout != null && { timeout: connectTimeout }), ...connect }),
  });
}

/** undici's connector, refusing blocked addresses before connecting (literals, lookups) and after (the peer). */
function guardedConnector(guard: AddressGuard, options: buildConnector.BuildOptions): buildConnector.connector {
  const given = (options as { lookup?: LookupFunction }).lookup;
  const connect = buildConnector({ ...options, lookup: guardedLookup(guard, given) } as buildConnector.BuildOptions);
  return (opts, callback) => {
    // net.connect does not look IP literals up: check them here
    if (isIP(opts.hostname)) {
      const refusal = guard.refusal(opts.hostname);
      if (refusal) return callback(new BlockedAddressError(opts.hostname, opts.hostname, refusal), null);
    }
    connect(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error('no socket'), null);
      try {
        checkPeer(guard, opts.hostname, socket);
      } catch (refused) {
        socket.destroy();
        return callback(refused as Error, null);
      }
      skipContinueResponses(socket);
      callback(null, socket);
    });
  };
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
  const deadline = attemptDeadline(req.timeoutMs, req.signal);
  const done = (outcome: TransportOutcome): HttpAttempt => ({ outcome, durationMs: performance.now() - started });
  const sending = { started: false };
  try {
    return done(await deadline.race(exchange(req, whenWriting(dispatcher, sending), deadline.signal)));
  } catch (err) {
    const outcome = outcomeOfError(err, req.timeoutMs, deadline.signal.aborted);
    const ranOut = (deadline.signal.reason as Error | undefined)?.name === 'TimeoutError';
    return done(outcome.kind === 'timeout' && ranOut && !sending.started ? connectTimeout(req.timeoutMs) : outcome);
  } finally {
    deadline.clear();
  }
}

/**
 * The dispatcher, noting when the request starts going out on a connection (undici calls `onConnect` once
 * the connection is open, right before it writes the request).
 */
function whenWriting(dispatcher: Dispatcher, sending: { started: boolean }): Dispatcher {
  return dispatcher.compose((dispatch) => (options, handler) => dispatch(options, new NotingStart(handler, sending)));
}

/** undici's DecoratorHandler passes every callback on; its types do not declare them. */
const Delegating = DecoratorHandler as unknown as new (
  handler: Dispatcher.DispatchHandlers,
) => Dispatcher.DispatchHandlers & { onConnect(abort: (err?: Error) => void): void };

class NotingStart extends Delegating {
  constructor(
    handler: Dispatcher.DispatchHandlers,
    private readonly sending: { started: boolean },
  ) {
    super(handler);
  }

  override onConnect(abort: (err?: Error) => void): void {
    this.sending.started = true;
    return super.onConnect(abort);
  }
}

/** A deadline that passed before the request went out: the connection did not open in time, nothing was sent. */
function connectTimeout(timeoutMs: number): TransportOutcome {
  return {
    kind: 'network',
    code: 'ETIMEDOUT',
    message: `no connection to the endpoint within the attempt's ${timeoutMs} ms; nothing was sent`,
  };
}

/** The request and its whole response. */
async function exchange(req: HttpRequest, dispatcher: Dispatcher, signal: AbortSignal): Promise<TransportOutcome> {
  const res = await request(req.url, { method: req.method, headers: req.headers, body: req.body, dispatcher, signal });
  const detail = await readBody(res.body, res.statusCode >= 400 ? ERROR_DETAIL_BYTES : 0);
  return { kind: 'http', status: res.statusCode, headers: res.headers, ...(detail && { detail }) };
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
const TLS_CODE =
  /^(CERT_|ERR_TLS_|ERR_SSL_|ERR_OSSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|INVALID_CA|HOSTNAME_MISMATCH)/;

/**
 * undici's own codes, as the Node network codes an operator knows (observed against real servers in the
 * activities' integration tests): the peer closing mid-exchange is "other side closed", a response that is not
 * HTTP is an llhttp parser error.
 */
function networkCode(code: string): string {
  if (code === 'UND_ERR_SOCKET') return 'ECONNRESET';
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'ETIMEDOUT';
  if (code.startsWith('HPE_')) return 'EPROTO';
  return code;
}

/** What an undici error means as an attempt outcome (also for the command subscriptions' callback requests). */
export function outcomeOfError(err: unknown, timeoutMs: number, timedOut: boolean): TransportOutcome {
  const blocked = [err, (err as { cause?: unknown } | undefined)?.cause].find((e) => e instanceof BlockedAddressError);
  if (blocked)
    return {
      kind: 'blocked-address',
      host: blocked.host,
      address: blocked.address,
      range: blocked.refusal.range,
      description: describeRefusal(blocked.refusal),
    };
  const e = err as { code?: unknown; name?: string; message?: string; cause?: { code?: unknown; message?: string } };
  if (timedOut || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return { kind: 'timeout', afterMs: timeoutMs };
  const rawCode = typeof e.cause?.code === 'string' ? e.cause.code : typeof e.code === 'string' ? e.code : 'UNKNOWN';
  const message = e.cause?.message ?? e.message;
  if (rawCode === 'ERR_INVALID_URL' || rawCode === 'UND_ERR_INVALID_ARG')
    return { kind: 'invalid-target', message: message ?? 'invalid request' };
  if (TLS_CODE.test(rawCode)) return { kind: 'tls', code: rawCode, ...(message && { message }) };
  return { kind: 'network', code: networkCode(rawCode), ...(message && { message }) };
}
