import { execFile } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findPython, projectRoot } from './temporal-cli';

const run = promisify(execFile);

/** The schemathesis release the API's property tests run (PyPI). */
export const SCHEMATHESIS_VERSION = '4.32.5';

/**
 * The `schemathesis` command, installed on first use into a virtual environment of the project
 * (`.temporal/schemathesis/<version>/`, git-ignored), from PyPI as the Temporal CLI is: the tests' own set-up,
 * nothing the product needs. `$REDELIVER_SCHEMATHESIS` names one you already have.
 */
export async function ensureSchemathesis(log: (line: string) => void = () => undefined): Promise<string> {
  // a developer's tool path, as REDELIVER_TEMPORAL_CLI: not a setting of the product
  const fromEnv = process.env.REDELIVER_SCHEMATHESIS;
  if (fromEnv) return fromEnv;
  const venv = path.join(projectRoot(), '.temporal', 'schemathesis', SCHEMATHESIS_VERSION);
  // written last: a folder without it is an install that was cut short (its scripts name the folder: it cannot be moved into place)
  const done = path.join(venv, 'installed');
  const binary = path.join(venv, 'bin', 'schemathesis');
  if (existsSync(done)) return binary;
  log(`installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into ${venv} ...`);
  rmSync(venv, { recursive: true, force: true });
  try {
    await run(await findPython(), ['-m', 'venv', venv]);
    const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', `schemathesis==${SCHEMATHESIS_VERSION}`];
    await run(path.join(venv, 'bin', 'python'), pip, { maxBuffer: 16 * 1024 * 1024, timeout: 10 * 60_000 });
  } catch (err) {
    rmSync(venv, { recursive: true, force: true });
    throw new Error(`could not install schemathesis ${SCHEMATHESIS_VERSION}: ${(err as Error).message.split('\n').slice(0, 3).join(' ')}`);
  }
  writeFileSync(done, `${SCHEMATHESIS_VERSION}\n`);
  log(`schemathesis ${SCHEMATHESIS_VERSION} installed`);
  return binary;
}
