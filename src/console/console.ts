import { readFileSync } from 'node:fs';
import path from 'node:path';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invokeRoute, routeOf, type RouteInput } from '../api/invoke';
import { findKey, type ApiKey } from '../api/keys';
import { problemOf } from '../api/problems';
import { projectRoot } from '../dev/temporal-cli';
import { registerDeliveryPages } from './delivery-pages';
import type { ConsoleOptions, ConsoleScope, PageHandler } from './types';
import { registerEndpointPages } from './endpoint-pages';
import { ConsoleSessions, SESSION_COOKIE, SESSION_IDLE_MS } from './sessions';

/**
 * Scripts from nowhere (none: the console has no script), styles and images from the console alone, forms that post
 * only to it, no framing: an id or an endpoint's answer that holds markup cannot run, even if escaping missed it.
 */
export const CONSOLE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const viewsFolder = () => path.join(projectRoot(), 'console', 'views');

/**
 * `redeliver serve`'s console under /console: server-rendered pages (Eta templates, escaped by default) over the
 * same routes as the HTTP API, called with the signed-in key, so a page sees and does exactly what the key may.
 */
export async function registerConsole(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  await app.register(
    async (scope) => {
      const eta = new Eta({ views: viewsFolder(), autoEscape: true, cache: true });
      const sessions = new ConsoleSessions();
      const cookieOptions = { path: '/console', httpOnly: true, sameSite: 'strict', secure: options.secure } as const;
      await scope.register(cookie);
      await scope.register(formbody);
      await scope.register(csrf, { sessionPlugin: '@fastify/cookie', cookieOpts: cookieOptions });
      secureHeaders(scope);
      const css = readFileSync(path.join(projectRoot(), 'console', 'static', 'console.css'));
      scope.get('/static/console.css', async (_req, reply) => reply.type('text/css; charset=utf-8').send(css));

      const keyOf = (req: FastifyRequest) => sessions.keyOf(req.cookies[SESSION_COOKIE]);
      const render =
        (req: FastifyRequest, reply: FastifyReply, key: ApiKey | null) =>
        (view: string, data: object, status = 200) =>
          reply
            .code(status)
            .type('text/html; charset=utf-8')
            .send(eta.render(view, { ...data, session: key && sessionWords(key), csrf: reply.generateCsrf(), query: req.query }));
      scope.setErrorHandler(async (err, req, reply) => {
        const problem = problemOf(err);
        if (problem.status >= 500) reply.errorText = String(err);
        return render(req, reply, keyOf(req))(
          'problem',
          { title: 'Problem', heading: problemHeading(problem.status), detail: problem.detail },
          problem.status,
        );
      });
      scope.setNotFoundHandler(async (req, reply) =>
        render(req, reply, keyOf(req))(
          'problem',
          { title: 'Not found', heading: 'Not found', detail: `no page ${req.url.split('?')[0]}` },
          404,
        ),
      );

      const page = (handler: PageHandler) => async (req: FastifyRequest, reply: FastifyReply) => {
        const key = keyOf(req);
        if (!key) return reply.redirect('/console/', 303);
        req.apiKey = key;
        const call = (operationId: string, input: RouteInput) => invokeRoute(routeOf(operationId), key, options.api, input);
        return handler({ key, call, render: render(req, reply, key) }, req, reply);
      };
      const scoped: ConsoleScope = {
        options,
        get: (url, handler) => void scope.get(url, page(handler)),
        post: (url, handler) => void scope.post(url, { preHandler: scope.csrfProtection }, page(handler)),
      };

      scope.get('/', async (req, reply) => {
        if (keyOf(req)) return reply.redirect('/console/deliveries', 303);
        return render(req, reply, null)('sign-in', { title: 'Sign in' });
      });
      scope.post('/sign-in', { preHandler: scope.csrfProtection }, async (req, reply) => {
        const given = (req.body as { key?: unknown } | undefined)?.key;
        const key = typeof given === 'string' && given.length > 0 ? findKey(options.keys, given) : undefined;
        if (!key) return render(req, reply, null)('sign-in', { title: 'Sign in', problem: 'That key is not one this server knows.' }, 401);
        reply.setCookie(SESSION_COOKIE, sessions.open(key), { ...cookieOptions, maxAge: SESSION_IDLE_MS / 1000 });
        return reply.redirect('/console/deliveries', 303);
      });
      scope.post('/sign-out', { preHandler: scope.csrfProtection }, async (req, reply) => {
        sessions.close(req.cookies[SESSION_COOKIE]);
        reply.clearCookie(SESSION_COOKIE, cookieOptions);
        return reply.redirect('/console/', 303);
      });
      registerDeliveryPages(scoped);
      registerEndpointPages(scoped);
    },
    { prefix: '/console' },
  );
}

/** Every console answer: the CSP, no sniffing, no framing, no referrer (a delivery id in a URL stays here), never cached. */
function secureHeaders(scope: FastifyInstance): void {
  scope.addHook('onSend', async (_req, reply, payload) => {
    reply.header('content-security-policy', CONSOLE_CSP);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('cache-control', 'no-store');
    return payload;
  });
}

function sessionWords(key: ApiKey) {
  return { name: key.name, tenants: key.tenants === '*' ? 'all' : key.tenants.join(', '), roles: [...key.roles].join(', ') };
}

function problemHeading(status: number): string {
  if (status === 404) return 'Not found';
  if (status === 403) return 'Not allowed';
  if (status === 409) return 'Refused';
  if (status === 400) return 'Not valid';
  return status >= 500 ? 'Something went wrong' : 'Problem';
}
