import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * The lint's import rules (CONTRIBUTING.md, "The contract and the direction of imports"): dependency-cruiser with
 * the project's own configuration reports a circle made only of type imports, which eslint's import/no-cycle does
 * not see, and the tree has none.
 */

const ROOT = join(__dirname, '..', '..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules', '.bin', 'depcruise');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** The violations dependency-cruiser finds under `cwd`'s src/ with the project's configuration. */
async function violations(cwd: string): Promise<Violation[]> {
  const run = promisify(execFile)(DEPCRUISE, ['src', '--config', CONFIG, '--output-type', 'json'], { cwd, maxBuffer: 64 << 20 });
  // it exits non-zero when it finds an error-level violation; its report is on stdout all the same
  const { stdout } = await run.catch((err: { stdout?: string }) => {
    if (!err.stdout) throw err;
    return { stdout: err.stdout };
  });
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

describe('the import direction lint', () => {
  let fixture: string;

  beforeAll(async () => {
    fixture = await mkdtemp(join(tmpdir(), 'redeliver-depcruise-'));
    await mkdir(join(fixture, 'src', 'contract'), { recursive: true });
    await mkdir(join(fixture, 'src', 'activities'), { recursive: true });
    const files: Record<string, string> = {
      'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, module: 'commonjs' }, include: ['src'] }),
      // a circle of type-only imports: gone from the compiled JavaScript, there all the same for the design
      'src/a.ts': "import type { B } from './b';\nexport interface A { b?: B }\n",
      'src/b.ts': "import type { A } from './a';\nexport interface B { a?: A }\n",
      // the contract reaching up into an activity's implementation
      'src/contract/index.ts': "import type { Impl } from '../activities/impl';\nexport type Shared = Impl;\n",
      'src/activities/impl.ts': 'export interface Impl { n: number }\n',
    };
    for (const [file, text] of Object.entries(files)) await writeFile(join(fixture, file), text);
  });

  afterAll(async () => {
    await rm(fixture, { recursive: true, force: true });
  });

  it('reports a circle made of type-only imports, and the contract importing an activity', async () => {
    const found = await violations(fixture);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ rule: expect.objectContaining({ name: 'no-circular' }), from: 'src/a.ts', to: 'src/b.ts' }),
        expect.objectContaining({ rule: expect.objectContaining({ name: 'contract-imports-pure-domain' }), from: 'src/contract/index.ts' }),
      ]),
    );
  }, 180_000);

  it('finds nothing in the tree', async () => {
    expect(await violations(ROOT)).toEqual([]);
  }, 180_000);
});
