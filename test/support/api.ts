import type { Redeliver } from '../../src/client/index';
import { startApiServer, type AccessLogEntry, type ApiServer, type ApiServerOptions } from '../../src/api/server';
import { apiSettingsFromEnv } from '../../src/config/api';

/** A key of the tests: its secret, and the entry the key file holds for it. */
export interface TestKey {
  key: string;
  tenants: string[];
  roles: string[];
  name?: string;
  rateLimit?: string;
}

export interface TestApi {
  url: string;
  server: ApiServer;
  /** The access log, as written. */
  log: AccessLogEntry[];
  call(method: string, path: string, key?: string | null, body?: unknown): Promise<ApiAnswer>;
  close(): Promise<void>;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  // the answers' shapes are what the tests assert
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/** `redeliver serve` in this process, on a free loopback port, over the given client, with these keys and variables. */
export async function startApi(
  redeliver: Redeliver,
  keys: TestKey[],
  env: Record<string, string> = {},
  options: Pick<ApiServerOptions, 'endpointChangeWaitMs'> = {},
): Promise<TestApi> {
  const settings = apiSettingsFromEnv({ REDELIVER_API_KEYS: JSON.stringify(keys), REDELIVER_API_RATE_LIMIT: 'off', ...env }, { port: '0' });
  const log: AccessLogEntry[] = [];
  const server = await startApiServer({ settings, redeliver, accessLog: (entry) => log.push(entry), ...options });
  return {
    url: server.url,
    server,
    log,
    call: (method, path, key, body) => callApi(server.url, method, path, key, body),
    close: () => server.close(),
  };
}

/** One request: JSON in (a string body is sent as is), JSON out. */
export async function callApi(base: string, method: string, path: string, key?: string | null, body?: unknown): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

/** The path of a delivery (or subscription) id: URL-encoded as one segment. */
export const idPath = (id: string) => encodeURIComponent(id);
