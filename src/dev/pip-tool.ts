import { execFile } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findPython, projectRoot } from './temporal-cli';

const run = promisify(execFile);

/** A tool the tests run, from PyPI at a pinned version (installed as `name==version`). */
export interface PipTool {
  name: string;
  version: string;
}

/**
 * The folder of a pinned PyPI tool's virtual environment (`.temporal/<name>/<version>/`, git-ignored), installed on
 * first use: the tests' own set-up, nothing the product needs. Its `bin/` holds the tool and its python.
 */
export async function ensurePipTool(tool: PipTool, log: (line: string) => void = () => undefined): Promise<string> {
  const venv = path.join(projectRoot(), '.temporal', tool.name, tool.version);
  // written last: a folder without it is an install that was cut short (its scripts name the folder: it cannot be moved into place)
  const done = path.join(venv, 'installed');
  if (existsSync(done)) return venv;
  log(`installing ${tool.name} ${tool.version} from PyPI into ${venv} ...`);
  rmSync(venv, { recursive: true, force: true });
  try {
    await run(await findPython(), ['-m', 'venv', venv]);
    const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', `${tool.name}==${tool.version}`];
    await run(path.join(venv, 'bin', 'python'), pip, { maxBuffer: 16 * 1024 * 1024, timeout: 10 * 60_000 });
  } catch (err) {
    rmSync(venv, { recursive: true, force: true });
    throw new Error(`could not install ${tool.name} ${tool.version}: ${(err as Error).message.split('\n').slice(0, 3).join(' ')}`);
  }
  writeFileSync(done, `${tool.version}\n`);
  log(`${tool.name} ${tool.version} installed`);
  return venv;
}
