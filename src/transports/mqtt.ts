import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import { MqttClient, type IClientOptions, type IConnackPacket, type Packet, type Timer } from 'mqtt';
import type { Mqtt5Packet, TransportOutcome } from '../classify/types';
import { AddressGuard, BlockedAddressError, describeRefusal, guardedLookup } from './address-guard';
import { credentialsFromEnvironment, credentialSources, MQTT_CREDENTIAL, type CredentialResolver } from './mqtt-credentials';
import { releaseSecret } from './secret-binding';

export type MqttVersion = '3.1.1' | '5';

/**
 * mqtts only: trust these CA certificates (PEM) instead of the system's roots (Node's `ca` replaces them),
 * and verify the broker's certificate against this name instead of the URL's host.
 */
export interface MqttTls {
  ca?: string;
  servername?: string;
}

/** A broker and who we are there: what a pooled connection is keyed by. */
export interface MqttEndpoint {
  /** `mqtt://host:port` or `mqtts://host:port`, without credentials. */
  url: string;
  protocolVersion: MqttVersion;
  /** A credential name the worker resolves; null = connect without user name and password. */
  credential: string | null;
  /**
   * Whose connection this is: the delivery's or subscription's tenant (the bridge's: the operator's), which
   * the credential must be for. Not part of the pool's key: the same login serves every tenant it is for.
   */
  tenant: string;
  /**
   * The delivery's TLS settings. Only without a credential: the trust for a credential is its binding's
   * (a connection naming one with a CA or server name of its own is refused, see accessFor).
   */
  tls: MqttTls | null;
}

export interface MqttPublish extends MqttEndpoint {
  topic: string;
  payload: string;
  qos: 0 | 1;
  /** The whole attempt: connecting (when no connection is open) and, at QoS 1, the PUBACK. */
  timeoutMs: number;
  /** MQTT 5 user properties (MQTT 3.1.1 has nowhere to put them). */
  userProperties?: Record<string, string>;
  /** MQTT 5 content type property. */
  contentType?: string;
  /** Ends the attempt early (the worker handing it back at shutdown). */
  signal?: AbortSignal;
}

export interface MqttAttempt {
  outcome: TransportOutcome;
  durationMs: number;
}

/**
 * What a successful QoS 0 attempt is: the PUBLISH written to an open connection. MQTT acknowledges
 * nothing at QoS 0; the classifier calls this `mqtt-sent`.
 */
const SENT: TransportOutcome = { kind: 'mqtt-sent' };

/** Keep-alive interval: the broker and the client each notice a dead connection within 1.5× of it. */
export const DEFAULT_KEEPALIVE_SECONDS = 30;
/** A pooled connection that carried nothing for this long is closed. */
export const DEFAULT_IDLE_MS = 120_000;

// Node's and OpenSSL's certificate and handshake codes, as the HTTP transport reads them
const TLS_CODE =
  /^(CERT_|ERR_TLS_|ERR_SSL_|ERR_OSSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|INVALID_CA|HOSTNAME_MISMATCH)/;

/** mqtt.js's keep-alive timer, unref'd: an idle connection never keeps a process alive. */
const UNREF_TIMER = {
  set: (fn: () => void, ms: number) => {
    const t = setInterval(fn, ms);
    t.unref();
    return t;
  },
  clear: (t: NodeJS.Timeout) => clearInterval(t),
} as unknown as Timer;

export interface ConnectOptions {
  clientId: string;
  /** MQTT clean session / clean start. */
  clean: boolean;
  /** MQTT 5: how long the broker keeps the session after the connection ends. Default 0. */
  sessionExpirySeconds?: number;
  /** MQTT 5: QoS 1 messages the broker may send before the first of them is acknowledged. Default: the protocol's (65,535). */
  receiveMaximum?: number;
  keepaliveSeconds: number;
  timeoutMs: number;
  /**
   * mqtt.js's hook for each received PUBLISH (a QoS 1 message is acknowledged when it calls back),
   * installed before connecting: a resumed session's queued messages may come right after the CONNACK.
   */
  handleMessage?: MqttClient['handleMessage'];
}

/** Where a worker's MQTT connections get their credentials and which addresses they may reach. */
export interface MqttConnectContext {
  credentials: CredentialResolver;
  /** The SSRF guard, as for HTTP (docs/deploying.md, "SSRF guard"). */
  guard: AddressGuard;
}

export type Connected = { ok: true; client: MqttClient; connack: IConnackPacket } | { ok: false; outcome: TransportOutcome };

/** The login and TLS trust of a connection, and a fingerprint of both: what a pooled connection is reused for. */
export type Access =
  | { ok: true; login: { username?: string; password?: string }; tls: MqttTls | null; fingerprint: string }
  | { ok: false; outcome: TransportOutcome };

/**
 * What a connection to `endpoint` logs in with and trusts, resolved now. A credential is released only
 * for a broker it is bound to (releaseSecret), and only with the TLS trust of its binding: a CA or server
 * name of the delivery's own would let the producer choose who receives it (Node trusts `ca` instead of
 * the system's roots and checks the certificate against `servername`), so such a request is refused,
 * nothing sent. Without a credential nothing of the worker's is at stake, and the delivery's TLS applies.
 */
export function accessFor(endpoint: MqttEndpoint, credentials: CredentialResolver): Access {
  const secure = /^mqtts:/i.test(endpoint.url);
  if (endpoint.credential === null) return { ok: true, login: {}, tls: secure ? (endpoint.tls ?? {}) : null, fingerprint: '' };
  if (endpoint.tls?.ca !== undefined || endpoint.tls?.servername !== undefined) {
    const message =
      `a connection with the MQTT credential "${endpoint.credential}" may not set tls.ca or tls.servername: its TLS trust is its binding's ` +
      `("brokers" in ${credentialSources(endpoint.credential)}), so nothing was sent`;
    return { ok: false, outcome: { kind: 'invalid-target', message } };
  }
  const released = releaseSecret(MQTT_CREDENTIAL, endpoint.credential, endpoint.url, credentials, endpoint.tenant);
  if (!released.ok) return released;
  const { username, password } = released.secret;
  const login = { ...(username !== undefined && { username }), ...(password !== undefined && { password }) };
  const tls = secure ? (released.options ?? {}) : null;
  return {
    ok: true,
    login,
    tls,
    fingerprint: createHash('sha256')
      .update(JSON.stringify([login, tls]))
      .digest('base64url'),
  };
}

/**
 * Opens one MQTT connection and waits for the broker's CONNACK; never throws for what the network or the
 * broker did: that is the outcome. mqtt.js never reconnects it by itself (`reconnectPeriod: 0`): whoever
 * asked for it retries with the delivery's backoff instead of a tight loop on a dead broker.
 */
export async function connectMqtt(
  endpoint: MqttEndpoint,
  context: MqttConnectContext,
  options: ConnectOptions,
  access: Access = accessFor(endpoint, context.credentials),
): Promise<Connected> {
  let url: URL;
  try {
    url = new URL(endpoint.url);
  } catch {
    return { ok: false, outcome: { kind: 'invalid-target', message: `not a URL: ${JSON.stringify(endpoint.url)}` } };
  }
  const secure = url.protocol === 'mqtts:';
  if (!secure && url.protocol !== 'mqtt:')
    return { ok: false, outcome: { kind: 'invalid-target', message: `scheme ${url.protocol} is not mqtt: or mqtts:` } };
  // before any socket: a credential goes only to the brokers it is bound to, trusting what its binding trusts
  if (!access.ok) return access;
  const { login, tls: tlsOptions } = access;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port ? Number(url.port) : secure ? 8883 : 1883;
  const v5 = endpoint.protocolVersion === '5';
  const clientOptions: IClientOptions = {
    protocolVersion: v5 ? 5 : 4,
    clientId: options.clientId,
    clean: options.clean,
    keepalive: options.keepaliveSeconds,
    reconnectPeriod: 0,
    connectTimeout: options.timeoutMs,
    resubscribe: false,
    queueQoSZero: false,
    timerVariant: UNREF_TIMER,
    ...(login.username !== undefined && { username: login.username }),
    ...(login.password !== undefined && { password: login.password }),
    ...(v5 && {
      properties: {
        sessionExpiryInterval: options.sessionExpirySeconds ?? 0,
        ...(options.receiveMaximum !== undefined && { receiveMaximum: options.receiveMaximum }),
      },
    }),
  };
  const client = new MqttClient(() => guardedStream(context.guard, host, port, tlsOptions), clientOptions);
  if (options.handleMessage) client.handleMessage = options.handleMessage;
  return new Promise((resolve) => {
    let connack: IConnackPacket | undefined;
    let settled = false;
    const finish = (result: Connected) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.removeListener('packetreceive', onPacket);
      if (!result.ok) client.end(true);
      resolve(result);
    };
    // our own bound as well: mqtt.js's CONNACK timer starts only once the socket exists
    const timer = setTimeout(() => finish({ ok: false, outcome: { kind: 'timeout', afterMs: options.timeoutMs } }), options.timeoutMs);
    const onPacket = (packet: Packet) => {
      if (packet.cmd === 'connack') connack = packet;
    };
    client.on('packetreceive', onPacket);
    // an MqttClient without an 'error' listener throws: this one stays for the connection's life
    client.on('error', (err) => finish({ ok: false, outcome: outcomeOfError(err, v5, 'connack', options.timeoutMs, connack) }));
    client.once('close', () =>
      finish({ ok: false, outcome: { kind: 'mqtt-closed', message: 'the connection closed before the broker answered CONNECT' } }),
    );
    client.once('connect', (packet) => {
      (client.stream as { unref?: () => void }).unref?.();
      finish({ ok: true, client, connack: packet });
    });
  });
}

/**
 * The socket mqtt.js speaks over, through the SSRF guard as the HTTP transport's: a blocked IP literal or
 * resolved address is refused before connecting, and the peer is checked once connected.
 */
function guardedStream(guard: AddressGuard, host: string, port: number, tlsOptions: MqttTls | null): net.Socket {
  // net.connect does not look IP literals up, and queues their connect at once: refuse them before it is called
  const refusal = net.isIP(host) ? guard.refusal(host) : undefined;
  if (refusal) {
    const never = new net.Socket();
    process.nextTick(() => never.destroy(new BlockedAddressError(host, host, refusal)));
    return never;
  }
  const lookup = guardedLookup(guard) as unknown as net.LookupFunction;
  const socket = tlsOptions
    ? tls.connect({
        host,
        port,
        lookup,
        servername: tlsOptions.servername ?? (net.isIP(host) ? undefined : host),
        rejectUnauthorized: true,
        ...(tlsOptions.ca !== undefined && { ca: tlsOptions.ca }),
      })
    : net.connect({ host, port, lookup });
  socket.once(tlsOptions ? 'secureConnect' : 'connect', () => {
    const peer = socket.remoteAddress;
    const late = peer ? guard.refusal(peer) : undefined;
    if (peer && late) socket.destroy(new BlockedAddressError(host, peer, late));
  });
  return socket;
}

/**
 * What an mqtt.js error means as an attempt outcome. `packet` is the MQTT 5 packet a reason code came in
 * (CONNACK while connecting, SUBACK while subscribing, …); MQTT 3.1.1 has reason codes in CONNACK only.
 */
export function outcomeOfError(
  err: unknown,
  v5: boolean,
  packet: Mqtt5Packet,
  timeoutMs: number,
  withProperties?: { properties?: { reasonString?: string; serverReference?: string } },
): TransportOutcome {
  if (err instanceof BlockedAddressError) {
    return {
      kind: 'blocked-address',
      host: err.host,
      address: err.address,
      range: err.refusal.range,
      description: describeRefusal(err.refusal),
    };
  }
  const e = err as { code?: unknown; message?: string };
  const message = e.message ?? String(err);
  if (typeof e.code === 'number') {
    if (!v5 && packet === 'connack') return { kind: 'mqtt3-connack', returnCode: e.code };
    // MQTT 3.1.1's one SUBACK failure code, 0x80 "Failure", says as much as MQTT 5's 0x80 "Unspecified error"
    const props = withProperties?.properties;
    return {
      kind: 'mqtt5',
      packet,
      reasonCode: e.code,
      ...(props?.reasonString && { reasonString: props.reasonString }),
      ...(props?.serverReference && { serverReference: props.serverReference }),
    };
  }
  if (typeof e.code === 'string') {
    if (TLS_CODE.test(e.code)) return { kind: 'tls', code: e.code, message };
    return { kind: 'network', code: e.code, message };
  }
  if (/connack timeout/i.test(message)) return { kind: 'timeout', afterMs: timeoutMs };
  if (/keepalive timeout/i.test(message)) return { kind: 'mqtt-closed', message: 'keep-alive timeout: the broker stopped answering' };
  return { kind: 'mqtt-closed', message };
}

/** A client id MQTT 3.1.1 brokers must accept: 1–23 letters and digits. */
export function pooledClientId(prefix = 'redeliver'): string {
  return `${prefix}${randomBytes(6).toString('hex')}`.slice(0, 23);
}

export interface MqttPoolOptions {
  /** Default: the worker's environment (docs/mqtt.md, "Credentials"). */
  credentials?: CredentialResolver;
  /**
   * The SSRF guard's allow-list, as for the HTTP agent: blocked ranges (loopback, private, …) or CIDRs
   * that brokers may be at anyway. Default: none — public addresses only.
   */
  allow?: AddressGuard | string | readonly string[];
  /** Default 30 s. */
  keepaliveSeconds?: number;
  /** Close a connection that carried nothing for this long. Default 2 min. */
  idleMs?: number;
}

export interface MqttPoolStats {
  /** Open connections. */
  connections: number;
  /** Connections opened (or tried) since the pool was made. */
  connects: number;
  /** Attempts waiting for their PUBACK (or QoS 0 write). */
  inFlight: number;
}

interface Pending {
  payload: Buffer;
  /** The MQTT packet id, once mqtt.js has written the PUBLISH (QoS 1). */
  packetId?: number;
  settle(outcome: TransportOutcome): void;
}

/**
 * MQTT connections shared by the attempts of one worker, one per broker URL + protocol version +
 * credential name + TLS settings. Keep-alive detects a dead connection; a connection that closes fails
 * the attempts waiting on it and leaves the pool. Nothing reconnects on its own: the next attempt opens
 * a new connection when its delivery's backoff says so, and concurrent attempts share one connect. Every
 * attempt passes the credential's gate again (accessFor): a revoked binding, or another login or TLS
 * trust, retires an open connection, which closes once the attempts in flight on it have ended.
 */
export class MqttPool {
  private readonly connections = new Map<string, PooledConnection>();
  private readonly connecting = new Map<string, Promise<{ ok: true; conn: PooledConnection } | { ok: false; outcome: TransportOutcome }>>();
  private readonly context: MqttConnectContext;
  readonly keepaliveSeconds: number;
  private readonly idleMs: number;
  private connects = 0;
  private closed = false;

  constructor(options: MqttPoolOptions = {}) {
    const allow = options.allow;
    this.context = {
      credentials: options.credentials ?? credentialsFromEnvironment(),
      guard: allow instanceof AddressGuard ? allow : AddressGuard.parse(allow, 'allow'),
    };
    this.keepaliveSeconds = options.keepaliveSeconds ?? DEFAULT_KEEPALIVE_SECONDS;
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  }

  /** One attempt: PUBLISH at the request's QoS and, at QoS 1, wait for the PUBACK. Never throws. */
  async publish(req: MqttPublish): Promise<MqttAttempt> {
    const started = performance.now();
    const done = (outcome: TransportOutcome): MqttAttempt => ({ outcome, durationMs: performance.now() - started });
    const deadline = Date.now() + req.timeoutMs;
    const got = await this.acquire(req, deadline, req.timeoutMs);
    if (!got.ok) return done(got.outcome);
    const conn = got.conn;
    if (conn.closed) return done({ kind: 'mqtt-closed', message: 'the connection closed before the message was sent' });
    if (req.signal?.aborted) return done({ kind: 'timeout', afterMs: performance.now() - started });

    const payload = Buffer.from(req.payload, 'utf8');
    const v5 = req.protocolVersion === '5';
    return new Promise((resolve) => {
      let settled = false;
      const pending: Pending = {
        payload,
        settle: (outcome) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          req.signal?.removeEventListener('abort', abort);
          conn.pending.delete(pending);
          // an unanswered QoS 1 message must not linger in mqtt.js's outgoing store (and be resent by it)
          if (outcome.kind === 'mqtt-no-puback' && pending.packetId !== undefined && !conn.closed)
            conn.client.removeOutgoingMessage(pending.packetId);
          conn.touch();
          resolve(done(outcome));
        },
      };
      const timer = setTimeout(
        () =>
          pending.settle(req.qos === 1 ? { kind: 'mqtt-no-puback', afterMs: req.timeoutMs } : { kind: 'timeout', afterMs: req.timeoutMs }),
        Math.max(1, deadline - Date.now()),
      );
      const abort = () => pending.settle({ kind: 'timeout', afterMs: performance.now() - started });
      req.signal?.addEventListener('abort', abort);
      conn.pending.add(pending);
      const properties = v5
        ? { ...(req.userProperties && { userProperties: req.userProperties }), ...(req.contentType && { contentType: req.contentType }) }
        : undefined;
      conn.client.publish(req.topic, payload, { qos: req.qos, ...(properties && { properties }) }, (err) => {
        // QoS 1 ends with the PUBACK (see PooledConnection); here only a failure to send at all
        if (req.qos === 0) pending.settle(err ? outcomeOfError(err, v5, 'puback', req.timeoutMs) : SENT);
        else if (err && typeof (err as { code?: unknown }).code !== 'number')
          pending.settle(outcomeOfError(err, v5, 'puback', req.timeoutMs));
      });
    });
  }

  /**
   * A connection of its own, outside the pool, with the pool's credentials and SSRF guard: for a
   * subscription, which needs a stable client id and a session that outlives a dropped connection.
   */
  connectDedicated(
    endpoint: MqttEndpoint,
    options: Omit<ConnectOptions, 'keepaliveSeconds'> & { keepaliveSeconds?: number },
  ): Promise<Connected> {
    return connectMqtt(endpoint, this.context, { keepaliveSeconds: this.keepaliveSeconds, ...options });
  }

  stats(): MqttPoolStats {
    let inFlight = 0;
    for (const conn of this.connections.values()) inFlight += conn.pending.size;
    return { connections: this.connections.size, connects: this.connects, inFlight };
  }

  /** Closes every connection; attempts still waiting end as `mqtt-closed`. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(all.map((c) => c.shut()));
  }

  private async acquire(endpoint: MqttEndpoint, deadline: number, timeoutMs: number) {
    if (this.closed) return { ok: false as const, outcome: { kind: 'mqtt-closed' as const, message: 'the worker is shutting down' } };
    const key = poolKey(endpoint);
    // resolved for every attempt, not only when connecting: an open connection, logged in, is no reason to
    // go on sending a credential whose binding was revoked, or the login (or trust) an operator replaced
    const access = accessFor(endpoint, this.context.credentials);
    // another tenant naming the credential says nothing about the connection its own tenants share
    if (!access.ok && access.outcome.kind === 'foreign-secret') return access;
    const open = this.connections.get(key);
    if (open && (!access.ok || open.fingerprint !== access.fingerprint)) {
      this.connections.delete(key);
      open.retire();
    } else if (open && !open.closed) return { ok: true as const, conn: open };
    if (!access.ok) return access;
    let connecting = this.connecting.get(key);
    if (!connecting) {
      connecting = this.open(key, endpoint, access, Math.max(1, deadline - Date.now())).finally(() => this.connecting.delete(key));
      this.connecting.set(key, connecting);
    }
    // an attempt that joins someone else's connect still waits no longer than its own timeout
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<{ ok: false; outcome: TransportOutcome }>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, outcome: { kind: 'timeout', afterMs: timeoutMs } }),
        Math.max(1, deadline - Date.now()),
      );
    });
    try {
      return await Promise.race([connecting, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async open(key: string, endpoint: MqttEndpoint, access: Access & { ok: true }, timeoutMs: number) {
    this.connects++;
    const options = { clientId: pooledClientId(), clean: true, keepaliveSeconds: this.keepaliveSeconds, timeoutMs };
    const result = await connectMqtt(endpoint, this.context, options, access);
    if (!result.ok) return result;
    const conn = new PooledConnection(result.client, access.fingerprint, endpoint.protocolVersion === '5', this.idleMs, () => {
      if (this.connections.get(key) === conn) this.connections.delete(key);
    });
    if (this.closed) {
      await conn.shut();
      return { ok: false as const, outcome: { kind: 'mqtt-closed' as const, message: 'the worker is shutting down' } };
    }
    this.connections.set(key, conn);
    return { ok: true as const, conn };
  }
}

/** One pooled connection: matches PUBACKs to the attempts waiting for them, and fails them all when it closes. */
class PooledConnection {
  readonly pending = new Set<Pending>();
  closed = false;
  /** Left the pool: closes once the attempts on it have ended. */
  private retiring = false;
  /** Why the connection ended, when the broker said (an MQTT 5 DISCONNECT) or mqtt.js saw it (keep-alive). */
  private ending: TransportOutcome | undefined;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly client: MqttClient,
    /** The login and trust it was opened with (Access): reused only while they hold. */
    readonly fingerprint: string,
    private readonly v5: boolean,
    private readonly idleMs: number,
    private readonly onClosed: () => void,
  ) {
    client.on('packetsend', (packet) => {
      if (packet.cmd !== 'publish' || !packet.qos) return;
      // our payload Buffers are unique per attempt: they tell which attempt this packet id belongs to
      for (const p of this.pending) if (p.payload === packet.payload) p.packetId = packet.messageId;
    });
    client.on('packetreceive', (packet) => {
      if (packet.cmd === 'puback') {
        for (const p of this.pending) {
          if (p.packetId !== packet.messageId) continue;
          // MQTT 3.1.1 PUBACKs carry no code: an acknowledgement is a success
          p.settle({
            kind: 'mqtt5',
            packet: 'puback',
            reasonCode: packet.reasonCode ?? 0,
            ...(packet.properties?.reasonString && { reasonString: packet.properties.reasonString }),
          });
        }
      } else if (packet.cmd === 'disconnect') {
        this.ending = {
          kind: 'mqtt5',
          packet: 'disconnect',
          reasonCode: packet.reasonCode ?? 0,
          ...(packet.properties?.reasonString && { reasonString: packet.properties.reasonString }),
          ...(packet.properties?.serverReference && { serverReference: packet.properties.serverReference }),
        };
      }
    });
    client.on('error', (err) => {
      this.ending ??= outcomeOfError(err, this.v5, 'disconnect', 0);
    });
    client.once('close', () => void this.shut());
    this.touch();
  }

  /** Restarts the idle clock (or closes a retired connection that carries nothing any more). */
  touch(): void {
    clearTimeout(this.idleTimer);
    if (this.closed) return;
    if (this.retiring && this.pending.size === 0) return void this.shut();
    this.idleTimer = setTimeout(() => {
      if (this.pending.size === 0) void this.shut();
      else this.touch();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /** No new attempt uses it; those in flight (sent under the login they started with) end first. */
  retire(): void {
    this.retiring = true;
    this.touch();
  }

  async shut(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.onClosed();
    const outcome = this.ending ?? { kind: 'mqtt-closed', message: 'the connection closed before the PUBACK came' };
    for (const p of [...this.pending]) p.settle(outcome);
    await new Promise<void>((resolve) => this.client.end(true, {}, () => resolve()));
  }
}

/** The pool's key: the same broker, version, credential and TLS settings share a connection. */
export function poolKey(endpoint: MqttEndpoint): string {
  const tls = endpoint.tls ? createHash('sha256').update(JSON.stringify(endpoint.tls)).digest('hex').slice(0, 16) : '';
  return [endpoint.url, endpoint.protocolVersion, endpoint.credential ?? '', tls].join('|');
}

export function createMqttPool(options: MqttPoolOptions = {}): MqttPool {
  return new MqttPool(options);
}
