import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import path from 'node:path';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Redeliver } from '../client/index';
import type { ApiSettings } from '../config/api';
import { projectRoot } from '../dev/temporal-cli';
import { Subscriptions } from '../client/subscriptions';
import { invokeRoute } from './invoke';
import { RedriveJobs } from './jobs';
import { findKey, type ApiKey } from './keys';
import { openApiDocument } from './openapi';
import { HttpProblem, problemOf, UNAVAILABLE_RETRY_AFTER_S } from './problems';
import { ENDPOINT_CHANGE_WAIT_MS, ROUTES, type ApiContext, type Route } from './routes';
import { MAX_PATH_PARAM_LENGTH } from './schemas';
import { pingService } from '../temporal/sdk-adapter';
import { registerConsole } from '../console/console';

/** One line of the access log: never a body, a header or a key; the key by its name. */
export interface AccessLogEntry {
  time: string;
  method: string;
  url: string;
  status: number;
  ms: number;
  key: string | null;
  ip: string;
  /** Set on a 5xx: what went wrong. */
  error?: string;
}

export interface ApiServerOptions {
  settings: ApiSettings;
  redeliver: Redeliver;
  /** Default: one JSON line per request on stderr. */
  accessLog?: (entry: AccessLogEntry) => void;
  /** How long a change to an endpoint's controls waits for a worker to apply it (default ENDPOINT_CHANGE_WAIT_MS). */
  endpointChangeWaitMs?: number;
}

export interface ApiServer {
  /** `http(s)://host:port` it listens on. */
  url: string;
  app: FastifyInstance;
  /** Stops accepting, lets requests in flight finish (up to the shutdown grace), stops the redrive jobs. */
  close(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKey | null;
  }
  interface FastifyReply {
    /** What went wrong, for the access log of a 5xx. */
    errorText: string | null;
  }
}

/** Whether Temporal answers a cheap call now: what /healthz says. */
async function temporalReachable(redeliver: Redeliver): Promise<boolean> {
  return pingService(redeliver.client).then(
    () => true,
    () => false,
  );
}

const version = (): string => (JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;

/** `redeliver serve`: the HTTP API on Fastify, over the client API (docs/http-api.md). */
export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const { settings, redeliver } = options;
  const api: ApiContext = {
    redeliver,
    subscriptions: new Subscriptions(redeliver.client, { taskQueue: redeliver.taskQueue }),
    jobs: new RedriveJobs(redeliver),
    endpointChangeWaitMs: options.endpointChangeWaitMs ?? ENDPOINT_CHANGE_WAIT_MS,
  };
  const app = Fastify({
    logger: false,
    bodyLimit: settings.bodyLimit,
    serverFactory: (handler) => boundedServer(settings, handler),
    // a request that arrives on a kept-alive connection while the server stops is answered 503 (Fastify's)
    return503OnClosing: true,
    // Fastify's 100 would refuse (414) the longer ids that submit accepts
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: (err, req, reply) => sendProblem(reply, fastifyProblem(err, req)),
  });
  // the body of every route is JSON: any other type is 415, as docs/http-api.md says, not a string for the routes to refuse
  app.removeContentTypeParser('text/plain');
  identifyCallers(app, settings.keys);
  logAccess(app, options.accessLog ?? ((entry) => process.stderr.write(`${JSON.stringify(entry)}\n`)));
  answerProblems(app);
  await limitRates(app, settings);
  const stopping = { now: false };
  serveDocumentAndHealth(app, redeliver, stopping);
  for (const route of ROUTES) app.route(serve(route, api));
  await registerConsole(app, {
    keys: settings.keys,
    api,
    secure: !!settings.tls,
    temporalUi: settings.temporalUiUrl ?? null,
    namespace: redeliver.client.options.namespace,
  });

  await app.listen({ port: settings.port, host: settings.host });
  const { port } = app.server.address() as AddressInfo;
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  return {
    url: `${settings.tls ? 'https' : 'http'}://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`,
    app,
    async close() {
      stopping.now = true;
      // past the grace, connections still busy are cut: the client sees a reset, as from a crashed server
      const cut = setTimeout(() => app.server.closeAllConnections(), settings.shutdownGraceMs);
      await app.close().finally(() => clearTimeout(cut));
      await api.jobs.stop();
    },
  };
}

/**
 * The HTTP(S) server under Fastify, with the bounds a slow or greedy client meets: a request arrives whole within
 * the request timeout, a connection moves a byte within the connection timeout, and one address holds at most
 * its cap of connections (docs/http-api.md, "Around the routes").
 */
function boundedServer(settings: ApiSettings, handler: RequestListener): Server {
  const options = {
    requestTimeout: settings.requestTimeoutMs,
    // the headers' own timeout may not be longer (Node refuses it); a dripped header is what a slow-loris sends
    headersTimeout: settings.requestTimeoutMs,
    // Node checks the two above this often (30 s unless told): a slow sender is closed within a second of its timeout
    connectionsCheckingInterval: Math.min(1000, settings.requestTimeoutMs),
  };
  const server = settings.tls ? createHttpsServer({ ...options, ...settings.tls }, handler) : createHttpServer(options, handler);
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  server.setTimeout(settings.connectionTimeoutMs);
  if (settings.maxConnectionsPerAddress !== null) capConnections(server, settings.maxConnectionsPerAddress);
  return server;
}

/** Connections past `cap` from one address are closed as they open: one client cannot hold every socket. */
function capConnections(server: NetServer, cap: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) return void socket.destroy();
    open.set(address, count);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/** What Fastify refuses before a route runs (a path parameter longer than any id, a body not JSON), said in our words. */
function fastifyProblem(err: Error & { code?: string }, req: FastifyRequest): HttpProblem {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
    return new HttpProblem(414, `a path parameter is over ${MAX_PATH_PARAM_LENGTH} characters: no id is that long`);
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new HttpProblem(
      415,
      `the body must be application/json, not ${JSON.stringify((req.headers['content-type'] ?? '').slice(0, 100))}`,
    );
  return problemOf(err);
}

function sendProblem(reply: FastifyReply, problem: HttpProblem) {
  for (const [name, value] of Object.entries(problem.extra.headers ?? {})) reply.header(name, value);
  if (problem.status === 401) reply.header('WWW-Authenticate', 'Bearer');
  return reply.code(problem.status).type('application/problem+json').send(problem.body());
}

/** Who is calling, known before the rate limit counts, so that it counts per key (per address without one). */
function identifyCallers(app: FastifyInstance, keys: readonly ApiKey[]): void {
  app.decorateRequest('apiKey', null);
  app.addHook('onRequest', async (req) => {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    req.apiKey = token === undefined ? null : (findKey(keys, token) ?? null);
  });
}

function logAccess(app: FastifyInstance, accessLog: (entry: AccessLogEntry) => void): void {
  app.decorateReply('errorText', null);
  app.addHook('onResponse', async (req, reply) => {
    accessLog({
      time: new Date().toISOString(),
      method: req.method,
      url: req.url,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      key: req.apiKey?.name ?? null,
      ip: req.ip,
      ...(reply.errorText && { error: reply.errorText }),
    });
  });
}

/** Every failure as problem details: the routes', Fastify's (413, 415, JSON), the rate limit's, an unknown route. */
function answerProblems(app: FastifyInstance): void {
  app.setErrorHandler(async (err, req, reply) => {
    const problem = fastifyProblem(err as Error, req);
    if (problem.status >= 500 && problem.status !== 503) reply.errorText = String(err);
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler(async (req, reply) =>
    reply
      .code(404)
      .type('application/problem+json')
      .send(new HttpProblem(404, `no route ${req.method} ${req.url.split('?')[0]}: see /openapi.json`).body()),
  );
}

/** The server's rate per key, or the key's own (`rateLimit` in the key file), with Retry-After on a 429. */
async function limitRates(app: FastifyInstance, settings: ApiSettings): Promise<void> {
  if (!settings.rateLimit && !settings.keys.some((k) => k.rate)) return;
  const rateOf = (req: FastifyRequest) => (req.apiKey?.rate === undefined ? settings.rateLimit : req.apiKey.rate);
  await app.register(rateLimit, {
    keyGenerator: (req) => (req.apiKey ? `key:${req.apiKey.name}` : `ip:${req.ip}`),
    allowList: (req) => rateOf(req) === null || req.url === '/healthz',
    max: (req) => rateOf(req)?.max ?? 1,
    timeWindow: (req) => rateOf(req)?.windowMs ?? 1000,
    errorResponseBuilder: (_req, context) =>
      new HttpProblem(429, `over the rate limit of ${context.max} requests in ${context.after}: try again after Retry-After seconds`, {
        headers: { 'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))) },
      }),
  });
}

/** `GET /openapi.json` and `GET /healthz`: no key needed. */
function serveDocumentAndHealth(app: FastifyInstance, redeliver: Redeliver, stopping: { now: boolean }): void {
  const document = openApiDocument(ROUTES, version());
  app.get('/openapi.json', async () => document);
  app.get('/healthz', async (_req, reply) => {
    const reachable = await temporalReachable(redeliver);
    const status = stopping.now ? 'stopping' : reachable ? 'ok' : 'unavailable';
    if (status !== 'ok') reply.code(503).header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S));
    return { status, temporal: reachable ? 'reachable' : 'unreachable' };
  });
}

/** A route as Fastify serves it: invoked with the caller's key, answered with the route's success status. */
function serve(route: Route, api: ApiContext) {
  return {
    method: route.method,
    url: route.path.replace(/\{(\w+)\}/g, ':$1'),
    handler: async (req: FastifyRequest, reply: FastifyReply) => {
      const answer = await invokeRoute(route, req.apiKey, api, { params: req.params, query: req.query, body: req.body });
      return reply.code(route.success.status).send(answer);
    },
  };
}
