import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../dev/temporal-cli';

/** The Temporal Server docker-compose.yml pins (temporalio/server, temporalio/admin-tools), built from the Go module proxy. */
export const TEMPORAL_SERVER_VERSION = '1.32.0';
/** The Temporal UI docker-compose.yml pins (temporalio/ui); its server is a Go module too. */
export const TEMPORAL_UI_VERSION = '2.54.1';

type Log = (line: string) => void;

/** A set of binaries `go install` builds from one module version into `.temporal/<folder>/<version>/`. */
export interface GoBuild {
  /** What it is, for the messages: 'Temporal Server 1.32.0'. */
  title: string;
  folder: string;
  module: string;
  version: string;
  /** The name each binary is installed under → its package's path inside the module. */
  binaries: Record<string, string>;
  tags?: string[];
  /** Files the binaries read at run time, copied from the module into the build's folder (same paths). */
  files?: string[];
  /** How long the first build takes here, for the message while it runs. */
  estimate: string;
}

export const TEMPORAL_SERVER_BUILD: GoBuild = {
  title: `Temporal Server ${TEMPORAL_SERVER_VERSION} and its temporal-sql-tool`,
  folder: 'server',
  module: 'go.temporal.io/server',
  version: TEMPORAL_SERVER_VERSION,
  binaries: { 'temporal-server': 'cmd/server', 'temporal-sql-tool': 'cmd/tools/sql' },
  // as the official images are built (the server's Makefile: CGO_ENABLED=0, -tags disable_grpc_modules)
  tags: ['disable_grpc_modules'],
  estimate: 'about 10 minutes on 2 cores',
};

export const TEMPORAL_UI_BUILD: GoBuild = {
  title: `Temporal UI server ${TEMPORAL_UI_VERSION}`,
  folder: 'ui-server',
  module: 'github.com/temporalio/ui-server/v2',
  version: TEMPORAL_UI_VERSION,
  binaries: { 'temporal-ui-server': 'cmd/server' },
  // the configuration template the temporalio/ui image runs with (`ui-server --env docker start`)
  files: ['config/docker.yaml'],
  estimate: 'a few minutes',
};

/** Where a build's binaries live: `.temporal/<folder>/<version>/`, git-ignored. */
export function buildDir(build: GoBuild): string {
  return path.join(projectRoot(), '.temporal', build.folder, build.version);
}

/**
 * The paths of a build's binaries, building them on first use with `go install <module>/<pkg>@v<version>`.
 * Go's module and build caches stay inside the project (`.temporal/go`), so a CI cache of `.temporal/`
 * keeps them. Concurrent callers (two test files, two terminals) wait for one build instead of making two.
 */
export async function ensureGoBuild(build: GoBuild, log: Log = () => undefined): Promise<Record<string, string>> {
  const dir = buildDir(build);
  const paths = Object.fromEntries(Object.keys(build.binaries).map((name) => [name, path.join(dir, name)]));
  if (Object.values(paths).every((p) => existsSync(p))) return paths;
  mkdirSync(dir, { recursive: true });
  const release = await lock(`${dir}.lock`, build, log);
  try {
    if (Object.values(paths).every((p) => existsSync(p))) return paths;
    log(`building ${build.title} from the Go module proxy into ${dir} (once; ${build.estimate}) ...`);
    const startedAt = Date.now();
    const staging = path.join(dir, '.gobin');
    await goInstall(build, staging, path.join(dir, 'build.log'), (minutes) =>
      log(`  still building ${build.title}: ${minutes} min so far (go's output: ${path.join(dir, 'build.log')})`),
    );
    for (const file of build.files ?? []) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      copyFileSync(path.join(goDir(), 'pkg', 'mod', `${build.module}@v${build.version}`, file), path.join(dir, file));
    }
    for (const [name, pkg] of Object.entries(build.binaries)) renameSync(path.join(staging, path.basename(pkg)), paths[name]!);
    rmSync(staging, { recursive: true, force: true });
    log(`built ${build.title} in ${Math.round((Date.now() - startedAt) / 1000)} s`);
    return paths;
  } finally {
    release();
  }
}

function goInstall(build: GoBuild, gobin: string, logFile: string, progress: (minutes: number) => void): Promise<void> {
  const go = goDir();
  const packages = Object.values(build.binaries).map((pkg) => `${build.module}/${pkg}@v${build.version}`);
  const args = ['install', ...(build.tags ? ['-tags', build.tags.join(',')] : []), ...packages];
  const out = openSync(logFile, 'w');
  return new Promise<void>((resolve, reject) => {
    const child = spawn('go', args, {
      stdio: ['ignore', out, out],
      // go's own environment (proxy, flags) passed on, its folders kept inside the project; no newer
      // toolchain downloaded behind the user's back; -modcacherw so that `rm -rf .temporal` can clean up
      env: {
        ...process.env,
        GOPATH: go,
        GOMODCACHE: path.join(go, 'pkg', 'mod'),
        GOCACHE: path.join(go, 'cache'),
        GOBIN: gobin,
        GOTOOLCHAIN: 'local',
        CGO_ENABLED: '0',
        GOFLAGS: `${process.env.GOFLAGS ?? ''} -modcacherw`.trim(),
      },
    });
    closeSync(out);
    let minutes = 0;
    const ticker = setInterval(() => progress(++minutes), 60_000);
    child.once('error', (err) => {
      clearInterval(ticker);
      reject(
        (err as NodeJS.ErrnoException).code === 'ENOENT'
          ? new Error(`building ${build.title} needs Go on the PATH (go install ${packages.join(' ')}): install Go from https://go.dev/dl/`)
          : err,
      );
    });
    child.once('exit', (code) => {
      clearInterval(ticker);
      if (code === 0) return resolve();
      const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-8).join('\n  ');
      reject(new Error(`go ${args.join(' ')} failed (exit ${code}); the end of ${logFile}:\n  ${tail}`));
    });
  });
}

/** GOPATH, and Go's module and build caches below it. */
const goDir = () => path.join(projectRoot(), '.temporal', 'go');

/** A lock file holding its owner's pid; one left by a process that died is taken over. */
async function lock(file: string, build: GoBuild, log: Log): Promise<() => void> {
  let said = false;
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = ownerOf(file);
    if (owner > 0 && !alive(owner)) {
      rmSync(file, { force: true });
      continue;
    }
    if (owner > 0 && !said) {
      log(`another process (pid ${owner}) is building ${build.title}; waiting for it ...`);
      said = true;
    }
    // no pid yet: its owner is between creating the file and writing to it
    await new Promise((r) => setTimeout(r, owner > 0 ? 2_000 : 100));
  }
}

function ownerOf(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8')) || 0;
  } catch {
    return 0;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
