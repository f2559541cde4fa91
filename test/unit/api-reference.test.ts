import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openApiDocument } from '../../src/api/openapi';
import { ROUTES } from '../../src/api/routes';

// The API reference in docs/http-api.md is rendered from the OpenAPI document the server serves (GET /openapi.json), so
// that it cannot say something else. `UPDATE_DOCS=1 npx jest test/unit/api-reference` rewrites it.
const DOC = path.join(__dirname, '../../docs/http-api.md');
const START =
  '<!-- api:start — rendered from the OpenAPI document (src/api/routes.ts); `UPDATE_DOCS=1 npx jest test/unit/api-reference` rewrites it -->';
const END = '<!-- api:end -->';

interface Operation {
  summary: string;
  description?: string;
  'x-role': string;
  'x-codeSamples': { source: string }[];
  parameters: { name: string; in: string; required: boolean; description?: string }[];
  requestBody?: { content: { 'application/json': { schema: Schema } } };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
type Schema = { $ref?: string; type?: string; items?: Schema; anyOf?: Schema[]; properties?: Record<string, Schema>; required?: string[] };

/** A schema in a few words: its component's name, `X[]` for an array of them. */
function named(schema: Schema): string {
  if (schema.$ref) return `\`${schema.$ref.split('/').at(-1)}\``;
  if (schema.anyOf) return schema.anyOf.map(named).join(' or ');
  if (schema.type === 'array' && schema.items) return `${named(schema.items)} array`;
  if (schema.properties)
    return `\`{ ${Object.keys(schema.properties)
      .map((p) => (schema.required?.includes(p) ? p : `${p}?`))
      .join(', ')} }\``;
  return schema.type ?? 'JSON';
}

function renderReference(doc: ReturnType<typeof openApiDocument>): string {
  const paths = doc.paths as Record<string, Record<string, Operation>>;
  const sections: string[] = [];
  for (const [route, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!op['x-role']) continue;
      const [success, ...errors] = Object.keys(op.responses);
      const answer = op.responses[success!]!.content?.['application/json']?.schema;
      const params = op.parameters.filter((p) => p.in === 'query').map((p) => `\`${p.name}\``);
      const lines = [
        `#### \`${method.toUpperCase()} ${route}\` (${op['x-role']})`,
        '',
        `${op.summary}.${op.description ? ` ${op.description}` : ''}`,
        '',
        ...(params.length ? [`- query: ${params.join(', ')}`] : []),
        ...(op.requestBody ? [`- body: ${named(op.requestBody.content['application/json'].schema)}`] : []),
        `- ${success}: ${answer ? named(answer) : 'JSON'}; else ${errors.join(', ')} (problem details)`,
        '',
        '```sh',
        op['x-codeSamples'][0]!.source,
        '```',
      ];
      sections.push(lines.join('\n'));
    }
  }
  return sections.join('\n\n');
}

test("docs/http-api.md's API reference is the OpenAPI document's", () => {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  expect(start).toBeGreaterThan(0);
  const reference = renderReference(openApiDocument(ROUTES, '0'));
  if (process.env.UPDATE_DOCS) writeFileSync(DOC, `${doc.slice(0, start + START.length)}\n\n${reference}\n\n${doc.slice(end)}`);
  else expect(doc.slice(start + START.length, end).trim()).toBe(reference);
});

test('every route has its curl example, and every component a reference is made to exists', () => {
  const doc = openApiDocument(ROUTES, '0');
  const text = JSON.stringify(doc);
  const components = (doc.components as { schemas: Record<string, unknown> }).schemas;
  for (const ref of text.match(/#\/components\/schemas\/[A-Za-z]+/g) ?? [])
    expect(Object.keys(components)).toContain(ref.split('/').at(-1));
  for (const route of ROUTES) expect(route.example).toMatch(/^curl -s -H "Authorization: Bearer \$KEY"/);
  expect(text).not.toContain('$defs');
});

test("every link leads to an operation of the document and gives each of its path's parameters, from a field the answer has", () => {
  const doc = openApiDocument(ROUTES, '0') as { paths: Record<string, Record<string, Operation & { operationId: string }>> };
  const operations = new Map(
    Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((op) => [op.operationId, op] as const)),
  );
  let links = 0;
  for (const route of ROUTES) {
    for (const [name, link] of Object.entries(route.links ?? {})) {
      links++;
      const target = operations.get(link.operationId);
      expect([name, target?.operationId]).toEqual([name, link.operationId]);
      const pathParams = target!.parameters.filter((p) => p.in === 'path').map((p) => p.name);
      expect(Object.keys(link.parameters).sort()).toEqual(pathParams.sort());
      // each value is taken from the success answer's body, by a field its schema has
      for (const expression of Object.values(link.parameters))
        expect(expression).toMatch(/^\$response\.body#\/[a-zA-Z]+(\/0\/[a-zA-Z]+)?$/);
    }
  }
  // the submit chains to the delivery's read and controls; a subscription's start to its read and stop
  expect(Object.keys(ROUTES.find((r) => r.operationId === 'submit')!.links ?? {})).toContain('getDelivery');
  expect(Object.keys(ROUTES.find((r) => r.operationId === 'startSubscription')!.links ?? {})).toEqual([
    'getSubscription',
    'stopSubscription',
  ]);
  expect(links).toBeGreaterThan(20);
});
