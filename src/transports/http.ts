import { Agent, buildConnector, util, type Dispatcher } from 'undici';
import { isIP } from 'node:net';
import type { TransportOutcome } from '../classify/types';
import { AddressGuard, BlockedAddressError, checkPeer, describeRefusal, guardedLookup, type LookupFunction } from './address-guard';
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
  const outcome = await new Promise<TransportOutcome>((resolve) => new Exchange(req, resolve).start(dispatcher));
  return { outcome, durationMs: performance.now() - started };
}

/**
 * One request and its whole response, as undici's dispatch handler: the status and headers, the body read to
 * its end (so a break is seen, and the connection can be reused) keeping the first bytes of an error's. One
 * deadline for the whole attempt, its own timer (undici's per-phase timeouts are longer and never fire first):
 * when it passes, or the attempt's signal aborts, the attempt ends at once, even while undici still waits for a
 * connection (DNS, TCP, TLS), which it would not cut short. No stream, promise or signal of its own per
 * attempt: at volume this is most of a worker's work for a message delivered at once (issue 32's profile).
 */
class Exchange implements Dispatcher.DispatchHandlers {
  private ended = false;
  /** undici's abort of this request, once it is on a connection (onConnect: right before it is written). */
  private abort: ((err: Error) => void) | null = null;
  /** Why the attempt was stopped before undici gave a connection: it is aborted as soon as one is given. */
  private stopped: Error | null = null;
  private timer: NodeJS.Timeout | undefined;
  private status = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private keep = 0;
  private size = 0;
  private readonly kept: Buffer[] = [];

  constructor(
    private readonly req: HttpRequest,
    private readonly resolve: (outcome: TransportOutcome) => void,
  ) {}

  start(dispatcher: Dispatcher): void {
    const { req } = this;
    let url: URL;
    try {
      url = new URL(req.url);
    } catch (err) {
      return this.end(outcomeOfError(err, req.timeoutMs, false));
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return this.end({ kind: 'invalid-target', message: 'Invalid URL protocol: the URL must start with `http:` or `https:`.' });
    if (req.signal?.aborted) return this.stop(false);
    this.timer = setTimeout(() => this.stop(true), req.timeoutMs);
    req.signal?.addEventListener('abort', this.cancelled, { once: true });
    const path = url.search ? `${url.pathname}${url.search}` : url.pathname;
    // undici hands what it throws here (a header it refuses) to onError
    dispatcher.dispatch({ origin: url.origin, path, method: req.method, headers: req.headers, body: req.body }, this);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.stopped) return abort(this.stopped);
    this.abort = abort;
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    // an interim response (1xx): the final one follows
    if (status < 200) return true;
    this.status = status;
    this.headers = util.parseHeaders(rawHeaders);
    this.keep = status >= 400 ? ERROR_DETAIL_BYTES : 0;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.size < this.keep) this.kept.push(chunk.subarray(0, this.keep - this.size));
    this.size += chunk.length;
    return true;
  }

  onComplete(): void {
    const detail = this.kept.length ? Buffer.concat(this.kept).toString('utf8').trim() : '';
    this.end({ kind: 'http', status: this.status, headers: this.headers, ...(detail && { detail }) });
  }

  onError(err: Error): void {
    this.end(outcomeOfError(err, this.req.timeoutMs, false));
  }

  private readonly cancelled = () => this.stop(false);

  /**
   * The deadline passed (`ranOut`) or the attempt's signal aborted: a timeout, or, when the deadline passed before
   * the request went out, no connection in time (nothing was sent).
   */
  private stop(ranOut: boolean): void {
    if (this.ended) return;
    const reason = ranOut
      ? new DOMException(`the attempt did not finish within ${this.req.timeoutMs} ms`, 'TimeoutError')
      : ((this.req.signal?.reason as Error | undefined) ?? new Error('the attempt was cancelled'));
    const abort = this.abort;
    // ended first: undici's abort calls onError at once, with the reason given
    this.end(ranOut && !abort ? connectTimeout(this.req.timeoutMs) : { kind: 'timeout', afterMs: this.req.timeoutMs });
    if (abort) abort(reason);
    else this.stopped = reason;
  }

  private end(outcome: TransportOutcome): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    this.req.signal?.removeEventListener('abort', this.cancelled);
    this.resolve(outcome);
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
