import type { z } from 'zod';
import { InvalidInputError } from '../errors';
import { zodProblems } from '../validation/delivery';
import type { ApiKey } from './keys';
import { HttpProblem } from './problems';
import { ROUTES, type ApiContext, type Route } from './routes';

/** What a caller hands a route: its path parameters, query and body, as they arrived (unparsed). */
export interface RouteInput {
  params?: unknown;
  query?: unknown;
  body?: unknown;
}

/**
 * A route called by a key: the key's role checked, the input parsed by the route's schemas, the handler run.
 * The one way in for the HTTP API and the console alike, so both refuse and scope the same.
 */
export async function invokeRoute(route: Route, key: ApiKey | null, api: ApiContext, input: RouteInput): Promise<unknown> {
  if (!key) throw new HttpProblem(401, 'send an API key: `Authorization: Bearer <key>`');
  if (!key.roles.has(route.role)) throw new HttpProblem(403, `this key lacks the ${route.role} role`);
  const call = {
    params: parse(route.params, input.params ?? {}, '(path)'),
    query: parse(route.query, input.query ?? {}, '(query)'),
    body: route.bodyCheckedByHandler ? input.body : parse(route.body, input.body, '(body)'),
    key,
    api,
  };
  return route.handle(call);
}

/** The route of an operation id (throws for one that does not exist: a programming error). */
export function routeOf(operationId: string): Route {
  const found = ROUTES.find((r) => r.operationId === operationId);
  if (!found) throw new Error(`no route has operationId ${operationId}`);
  return found;
}

/** Input parsed by its schema; every problem at once, named as the client API names them. */
function parse(schema: z.ZodType | undefined, value: unknown, what: string): unknown {
  if (!schema) return value;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InvalidInputError(zodProblems(parsed.error, what), what);
  return parsed.data;
}
