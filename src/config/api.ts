import { readFileSync } from 'node:fs';
import { parseKeys, parseRate, RATE_RULE, type ApiKey, type Rate } from '../api/keys';
import { parseDuration } from '../policy/duration';
import { EnvReader, type Environment } from './errors';
import { readShutdownGrace } from './settings';

/** What `redeliver serve` takes from the environment and its flags (the flags win). */
export interface ApiSettings {
  host: string;
  port: number;
  keys: ApiKey[];
  /** Certificate and key (PEM) to serve HTTPS with; plain HTTP without. */
  tls?: { cert: Buffer; key: Buffer };
  /** Requests per key (per address before a key is known); null: unlimited. */
  rateLimit: Rate | null;
  /** Largest request body, in bytes. */
  bodyLimit: number;
  /** After SIGTERM, how long requests in flight may go on. */
  shutdownGraceMs: number;
  /** How long a request, headers and body, may take to arrive whole (408 and closed after): a slow sender's bound. */
  requestTimeoutMs: number;
  /** How long a connection may sit with no byte moving either way (closed after): a reader that never reads. */
  connectionTimeoutMs: number;
  /** How long a kept-alive connection may wait for its next request. */
  keepAliveTimeoutMs: number;
  /** Connections open at once from one address (more are closed at once); null: no cap. */
  maxConnectionsPerAddress: number | null;
  /** The Temporal UI the console's delivery pages link to; null: no link. */
  temporalUiUrl?: string | null;
}

export interface ApiFlags {
  port?: string;
  host?: string;
}

export const DEFAULT_API_PORT = 8090;
export const DEFAULT_API_RATE = '100/s';
/** Room for a batch of a few hundred small messages, or ten of the largest (a delivery is at most 384 KiB as stored). */
export const DEFAULT_API_BODY_LIMIT = 4 * 1024 * 1024;
/** The largest body at 150 KB/s: a slow producer's, not a slow-loris's (800 connections dripping a byte per 10 s). */
export const DEFAULT_API_REQUEST_TIMEOUT_MS = 30_000;
/** Longer than any answer takes to make: a cancel waits for an attempt in flight, which may take 5 min. */
export const DEFAULT_API_CONNECTION_TIMEOUT_MS = 6 * 60_000;
/**
 * Fastify's default: longer than a load balancer's idle timeout (AWS's 60 s), so that the balancer closes an idle
 * connection first, and never sends a request onto one the server is closing (a 502).
 */
export const DEFAULT_API_KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** Room for a busy producer's connection pool; a proxy in front of the server is one address: raise it, or `off`. */
export const DEFAULT_API_MAX_CONNECTIONS_PER_ADDRESS = 100;

/** The API's settings; throws a ConfigError naming every bad variable or flag, all at once. */
export function apiSettingsFromEnv(env: Environment = process.env, flags: ApiFlags = {}): ApiSettings {
  const reader = new EnvReader(env);
  const port = Number(flags.port ?? DEFAULT_API_PORT);
  if (!/^\d{1,5}$/.test(flags.port ?? String(DEFAULT_API_PORT)) || port > 65535)
    reader.problem('--port', `must be a port number from 0 to 65535, got ${JSON.stringify(flags.port)}`);
  const keys = readKeys(reader);
  const tls = readTls(reader);
  const rawRate = reader.string('REDELIVER_API_RATE_LIMIT') ?? DEFAULT_API_RATE;
  const rateLimit = parseRate(rawRate);
  if (rateLimit === undefined) reader.problem('REDELIVER_API_RATE_LIMIT', `${RATE_RULE}; got ${JSON.stringify(rawRate)}`);
  const bodyLimit = reader.positiveInt('REDELIVER_API_BODY_LIMIT', DEFAULT_API_BODY_LIMIT);
  const shutdownGraceMs = readShutdownGrace(reader);
  const timeouts = readTimeouts(reader);
  const maxConnectionsPerAddress = readConnectionCap(reader);
  const temporalUiUrl = readTemporalUi(reader);
  reader.done();
  return {
    host: flags.host ?? '127.0.0.1',
    port,
    keys,
    ...(tls && { tls }),
    rateLimit: rateLimit ?? null,
    bodyLimit,
    shutdownGraceMs,
    ...timeouts,
    maxConnectionsPerAddress,
    temporalUiUrl,
  };
}

export const DEFAULT_TEMPORAL_UI_URL = 'http://localhost:8233';

/** REDELIVER_TEMPORAL_UI_URL: an http(s) URL (a trailing slash dropped), or off. */
function readTemporalUi(reader: EnvReader): string | null {
  const raw = reader.string('REDELIVER_TEMPORAL_UI_URL') ?? DEFAULT_TEMPORAL_UI_URL;
  if (raw.trim() === 'off') return null;
  if (!/^https?:\/\/[^\s]+$/.test(raw.trim())) {
    reader.problem('REDELIVER_TEMPORAL_UI_URL', `must be an http(s) URL of the Temporal UI, or off; got ${JSON.stringify(raw)}`);
    return null;
  }
  return raw.trim().replace(/\/+$/, '');
}

/** A duration above 0 (`30s`, `5m`; a bare number is ms), or the fallback when unset. */
function positiveDuration(reader: EnvReader, name: string, fallback: number): number {
  const raw = reader.string(name);
  if (raw === undefined) return fallback;
  const ms = parseDuration(/^\d+$/.test(raw) ? Number(raw) : raw);
  if (ms !== undefined && ms > 0 && ms <= 2 ** 31 - 1) return ms;
  return (
    reader.problem(
      name,
      `must be a duration above 0 and under 24 days, such as 30s or 5m (a bare number is ms); got ${JSON.stringify(raw)}`,
    ) ?? fallback
  );
}

function readTimeouts(reader: EnvReader): Pick<ApiSettings, 'requestTimeoutMs' | 'connectionTimeoutMs' | 'keepAliveTimeoutMs'> {
  return {
    requestTimeoutMs: positiveDuration(reader, 'REDELIVER_API_REQUEST_TIMEOUT', DEFAULT_API_REQUEST_TIMEOUT_MS),
    connectionTimeoutMs: positiveDuration(reader, 'REDELIVER_API_CONNECTION_TIMEOUT', DEFAULT_API_CONNECTION_TIMEOUT_MS),
    keepAliveTimeoutMs: positiveDuration(reader, 'REDELIVER_API_KEEP_ALIVE_TIMEOUT', DEFAULT_API_KEEP_ALIVE_TIMEOUT_MS),
  };
}

function readConnectionCap(reader: EnvReader): number | null {
  const name = 'REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS';
  const raw = reader.string(name);
  if (raw === undefined) return DEFAULT_API_MAX_CONNECTIONS_PER_ADDRESS;
  if (raw.toLowerCase() === 'off') return null;
  if (/^\d{1,9}$/.test(raw) && Number(raw) > 0) return Number(raw);
  return reader.problem(name, `must be a whole number above 0, or off; got ${JSON.stringify(raw)}`) ?? null;
}

/** REDELIVER_API_KEYS_FILE (a file, e.g. a mounted secret) or REDELIVER_API_KEYS (the JSON itself): one of them. */
function readKeys(reader: EnvReader): ApiKey[] {
  const file = reader.string('REDELIVER_API_KEYS_FILE');
  const inline = reader.string('REDELIVER_API_KEYS');
  const variable = file !== undefined ? 'REDELIVER_API_KEYS_FILE' : 'REDELIVER_API_KEYS';
  if (file !== undefined && inline !== undefined) return reader.problem(variable, 'and REDELIVER_API_KEYS are both set; give one') ?? [];
  if (file === undefined && inline === undefined)
    return reader.problem('REDELIVER_API_KEYS_FILE', 'is not set: name a JSON file of API keys (or give them in REDELIVER_API_KEYS)') ?? [];
  let text: string;
  try {
    text = file !== undefined ? readFileSync(file, 'utf8') : inline!;
  } catch (err) {
    return reader.problem(variable, `cannot read ${JSON.stringify(file)}: ${(err as Error).message}`) ?? [];
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // not the parser's message: it quotes the text, which holds secrets
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    return reader.problem(variable, `is not valid JSON${at ? ` (at character ${at})` : ''}`) ?? [];
  }
  const { keys, problems } = parseKeys(json);
  for (const p of problems) reader.problem(variable, `${p.field}: ${p.message}`);
  return keys;
}

function readTls(reader: EnvReader): { cert: Buffer; key: Buffer } | undefined {
  const files = { cert: reader.string('REDELIVER_API_TLS_CERT_FILE'), key: reader.string('REDELIVER_API_TLS_KEY_FILE') };
  if (files.cert === undefined && files.key === undefined) return undefined;
  const read = (variable: string, file: string | undefined): Buffer | undefined => {
    if (file === undefined) return reader.problem(variable, 'must be set too: HTTPS needs both the certificate and its key (PEM files)');
    try {
      return readFileSync(file);
    } catch (err) {
      return reader.problem(variable, `cannot read ${JSON.stringify(file)}: ${(err as Error).message}`);
    }
  };
  const cert = read('REDELIVER_API_TLS_CERT_FILE', files.cert);
  const key = read('REDELIVER_API_TLS_KEY_FILE', files.key);
  return cert && key ? { cert, key } : undefined;
}
