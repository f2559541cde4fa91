import { spawn } from 'node:child_process';
import path from 'node:path';

export const CLI = path.join(__dirname, '..', '..', 'lib', 'cli', 'main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `redeliver` CLI (npm test builds it first) and collects its output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
