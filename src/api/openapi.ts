import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { DOCUMENT_CROSS_RULES, DOCUMENT_RULES } from './document-rules';
import type { Route } from './routes';
import { healthSchema, MAX_PATH_PARAM_LENGTH, problemSchema } from './schemas';

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[]; description?: string };

/** Statuses every route with a key may answer, whatever it does. */
export const COMMON_ERRORS = [401, 403, 429, 503] as const;

const ERROR_MEANING: Record<number, string> = {
  400: 'bad input: `problems` names every wrong field',
  401: 'no key, or a key this server does not know (`Authorization: Bearer <key>`)',
  403: "the key lacks the route's role, or a tenant named in the request",
  404: "nothing of the key's tenants has that id",
  409: 'a clash with what exists: a message id or batch id reused for something else (`problems`), or a refused control (`kind`)',
  413: 'the body is over the size limit (REDELIVER_API_BODY_LIMIT)',
  414: `a path parameter is longer than any id (${MAX_PATH_PARAM_LENGTH} characters)`,
  415: 'the body is not `application/json`',
  429: "over the key's rate limit: try again after `Retry-After` seconds",
  503: 'Temporal is unreachable (or the server is stopping): try again after `Retry-After` seconds',
};

const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait', schema: { type: 'string', pattern: '^[0-9]+$' } } };

/** Schemas shared by the routes, by name: what `$defs` each schema brought, gathered for `components`. */
class Components {
  readonly schemas: Record<string, JsonSchema> = {};

  /** A zod schema as OpenAPI 3.1 takes it: JSON Schema 2020-12, named schemas referenced from components. */
  add(schema: z.ZodType): JsonSchema {
    const json = z.toJSONSchema(schema, {
      io: 'input',
      unrepresentable: 'any',
      override: (ctx) => {
        // a command's deadline may be a Date in code; over HTTP it is a date-time string or epoch ms
        if ((ctx.zodSchema as { _zod: { def: { type: string } } })._zod.def.type === 'date')
          Object.assign(ctx.jsonSchema, { type: 'string', format: 'date-time' });
        // what validation checks beyond the shape, where JSON Schema can say it
        const rule = DOCUMENT_RULES.get(ctx.zodSchema);
        if (rule) {
          const { description } = ctx.jsonSchema;
          for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
          Object.assign(ctx.jsonSchema, rule, description !== undefined && { description });
        }
        Object.assign(ctx.jsonSchema, DOCUMENT_CROSS_RULES.get(ctx.zodSchema));
      },
    }) as JsonSchema;
    const { $schema: _draft, $defs, ...rest } = json as JsonSchema & { $defs?: Record<string, JsonSchema> };
    for (const [name, def] of Object.entries($defs ?? {})) this.schemas[name] = relink(def) as JsonSchema;
    return relink(rest) as JsonSchema;
  }
}

/** `#/$defs/X` → `#/components/schemas/X`, throughout. */
function relink(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relink);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' ? v.replace('#/$defs/', '#/components/schemas/') : relink(v),
    ]),
  );
}

/** A zod object's fields as OpenAPI parameters (`in: path` or `in: query`). */
function parameters(components: Components, schema: z.ZodType | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const json = components.add(schema);
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === 'path' || (json.required ?? []).includes(name),
      ...(description && { description }),
      schema: rest,
    };
  });
}

function operation(components: Components, route: Route) {
  const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
  // Fastify refuses a body by its size and type before any route sees it (one that takes none too); a path parameter, by its
  // length; a parameter its schema refuses is a 400
  const framework = [
    ...(route.method === 'GET' ? [] : [413, 415]),
    ...(route.params ? [414] : []),
    ...(route.params || route.query ? [400] : []),
  ];
  const errors = [...new Set([...route.errors, ...framework, ...COMMON_ERRORS])].sort();
  const bodyRequired = route.body ? !route.body.safeParse(undefined).success : false;
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description && { description: route.description }),
    security: [{ bearer: [] }],
    'x-role': route.role,
    'x-codeSamples': [{ lang: 'Shell', label: 'curl', source: route.example }],
    parameters: [...parameters(components, route.params, 'path'), ...parameters(components, route.query, 'query')],
    ...(route.body && {
      requestBody: { required: bodyRequired, content: { 'application/json': { schema: components.add(route.body) } } },
    }),
    responses: {
      [route.success.status]: {
        description: route.success.description,
        content: { 'application/json': { schema: components.add(route.success.schema) } },
        ...(route.links && { links: route.links }),
      },
      ...Object.fromEntries(
        errors.map((status) => [
          status,
          {
            description: `${STATUS_CODES[status]}: ${ERROR_MEANING[status]}`,
            ...((status === 429 || status === 503) && { headers: RETRY_AFTER }),
            content: problem,
          },
        ]),
      ),
    },
  };
}

/** The OpenAPI 3.1 document of the routes, made from the schemas that check their input (`GET /openapi.json`). */
export function openApiDocument(routes: readonly Route[], version: string): Record<string, unknown> {
  const components = new Components();
  components.add(problemSchema);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(components, route);
  paths['/healthz'] = {
    get: {
      operationId: 'health',
      summary: 'Whether the server serves: 200, or 503 while Temporal is unreachable or the server is stopping',
      security: [],
      responses: {
        200: { description: 'serving', content: { 'application/json': { schema: components.add(healthSchema) } } },
        503: {
          description: 'not serving',
          headers: RETRY_AFTER,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'redeliver',
      version,
      description:
        'Submit and operate IoT message deliveries over HTTP (`redeliver serve`). Every route needs an API key: `Authorization: Bearer <key>`.',
    },
    paths,
    components: { schemas: components.schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  };
}
