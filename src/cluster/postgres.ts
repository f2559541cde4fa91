import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ProcessSpec } from './processes';

const run = promisify(execFile);

/** The PostgreSQL user Temporal connects as; initdb makes it the superuser, so it can create Temporal's databases. */
export const POSTGRES_USER = 'temporal';

/**
 * The folder of PostgreSQL's server programs (initdb, postgres, pg_isready): Debian's packages put them in
 * /usr/lib/postgresql/<major>/bin (the newest wins), elsewhere they are on the PATH.
 */
export function findPostgres(): string {
  const debian = '/usr/lib/postgresql';
  const majors = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => existsSync(path.join(debian, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors[0]) return path.join(debian, majors[0], 'bin');
  try {
    return path.dirname(execFileSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).trim());
  } catch {
    throw new Error(
      "PostgreSQL's server programs (initdb, postgres) are neither in /usr/lib/postgresql/*/bin nor on the PATH: " +
        "install Debian's postgresql package (apt-get install postgresql) or your system's PostgreSQL server",
    );
  }
}

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` user Debian's package makes (else `nobody`). */
export function postgresUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
      return { uid: id('-u'), gid: id('-g'), name };
    } catch {
      // no such user: try the next
    }
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as (it refuses root)');
}

/** A new database cluster in `dataDir`, owned by `user`, with TCP logins by password only. */
export async function initPostgres(bin: string, dataDir: string, password: string, user = postgresUser()): Promise<void> {
  const pwfile = `${dataDir}.password`;
  writeFileSync(pwfile, password, { mode: 0o600 });
  try {
    if (user) chownSync(pwfile, user.uid, user.gid);
    const args = ['-D', dataDir, '-U', POSTGRES_USER, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-locale'];
    await run(path.join(bin, 'initdb'), args, { ...(user && { uid: user.uid, gid: user.gid }), maxBuffer: 16 * 1024 * 1024 });
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** How the postmaster runs: on loopback only, no Unix socket (its default folder belongs to the system's PostgreSQL). */
export function postgresSpec(bin: string, dataDir: string, port: number, logFile: string, user = postgresUser()): ProcessSpec {
  return {
    command: path.join(bin, 'postgres'),
    // five Temporal processes keep up to 30 connections each (persistence 20, visibility 10)
    args: ['-D', dataDir, '-p', String(port), '-h', '127.0.0.1', '-k', '', '-c', 'max_connections=300'],
    env: { LANG: 'C.UTF-8', PATH: '/usr/bin:/bin' },
    logFile,
    ...(user && { uid: user.uid, gid: user.gid }),
  };
}

/** Waits until PostgreSQL accepts connections on `port`; throws `failed()`'s error as soon as there is one. */
export async function waitForPostgres(bin: string, port: number, failed: () => Error | undefined, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const error = failed();
    if (error) throw error;
    try {
      await run(path.join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)]);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections on 127.0.0.1:${port} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
