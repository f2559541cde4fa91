import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import * as registry from '../../src/workflows/patches';
import { PATCHES, type PatchId } from '../../src/workflows/patches';

/*
 * The patch registry against the code and the recorded histories: a patch asked in the workflow code is one
 * the registry lists, and each of its sides is recorded as it says (CONTRIBUTING.md, "How to change the
 * command sequence").
 */

const ROOT = path.join(__dirname, '..', '..');
const HISTORIES = path.join(ROOT, 'test', 'histories');
const ids = Object.keys(PATCHES) as PatchId[];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Each `patched(…)` and `deprecatePatch(…)` call of a file, with the id it names (undefined when not from the registry). */
function patchCalls(file: string): { at: string; id: string | undefined }[] {
  const text = readFileSync(file, 'utf8');
  if (!/\b(patched|deprecatePatch)\(/.test(text)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  // names imported from the registry module, as the file calls them
  const fromRegistry = new Map<string, string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!/(^|\/)patches$/.test(statement.moduleSpecifier.text)) continue;
    const named = statement.importClause?.namedBindings;
    if (named && ts.isNamedImports(named)) {
      for (const el of named.elements) fromRegistry.set(el.name.text, (el.propertyName ?? el.name).text);
    }
  }
  const calls: { at: string; id: string | undefined }[] = [];
  const visit = (node: ts.Node) => {
    // patched(ID), or through an effect a state class is given (effects.patched(ID))
    const callee = ts.isCallExpression(node)
      ? ts.isPropertyAccessExpression(node.expression)
        ? node.expression.name
        : node.expression
      : null;
    if (ts.isCallExpression(node) && callee && ts.isIdentifier(callee) && /^(patched|deprecatePatch)$/.test(callee.text)) {
      const [arg] = node.arguments;
      const exported = arg && ts.isIdentifier(arg) ? fromRegistry.get(arg.text) : undefined;
      const value = exported === undefined ? undefined : (registry as Record<string, unknown>)[exported];
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      calls.push({ at: `${path.relative(ROOT, file)}:${line}`, id: typeof value === 'string' ? value : undefined });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return calls;
}

/** The ids of the patch markers a recorded history holds. */
function markersOf(file: string): Set<string> {
  const history = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')) as {
    events: { markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, { payloads: { data: string }[] }> } }[];
  };
  const found = new Set<string>();
  for (const e of history.events) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_patch') continue;
    const data = marker.details?.['patch-data']?.payloads[0]?.data;
    if (data) found.add((JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string }).id);
  }
  return found;
}

test('every patched() and deprecatePatch() in src names an id imported from the registry', () => {
  const calls = sourceFiles(path.join(ROOT, 'src')).flatMap(patchCalls);
  expect(calls.length).toBeGreaterThanOrEqual(ids.length);
  expect(calls.filter((c) => c.id === undefined || !ids.includes(c.id as PatchId)).map((c) => c.at)).toEqual([]);
  // and every id of the registry is still asked somewhere (retired ids leave it with their deprecatePatch)
  expect(ids.filter((id) => !calls.some((c) => c.id === id))).toEqual([]);
});

test.each(ids)('%s: recorded on the side the registry says', (id) => {
  const { before, after } = PATCHES[id];
  expect(after.length).toBeGreaterThan(0);
  expect([...before, ...after].filter((file) => !existsSync(path.join(HISTORIES, file)))).toEqual([]);
  expect(after.filter((file) => !markersOf(file).has(id))).toEqual([]);
  expect(before.filter((file) => markersOf(file).has(id))).toEqual([]);
});
