import { spawn, type ChildProcess } from 'node:child_process';
import { CLI } from './cli';

export interface WorkerProcess {
  process: ChildProcess;
  /** Resolves once the worker says it is polling; rejects if it exits first. */
  ready: Promise<void>;
  exited: Promise<number | string | null>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** Ends it with this signal (SIGKILL: no grace, nothing handed back) and waits until it is gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * A real `redeliver worker` process (the built CLI, as production runs it), on the tests' workflow bundle,
 * allowed to reach loopback endpoints. A separate process, so that a test can kill it outright.
 */
export function spawnWorker(options: { address: string; taskQueue: string; env?: Record<string, string> }): WorkerProcess {
  const child = spawn(process.execPath, [CLI, 'worker', '--address', options.address, '--task-queue', options.taskQueue], {
    env: {
      ...process.env,
      REDELIVER_ALLOW_ADDRESSES: 'loopback',
      REDELIVER_WORKFLOW_BUNDLE: process.env.REDELIVER_TEST_BUNDLE,
      REDELIVER_LOG_LEVEL: 'ERROR',
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('worker polling task queue')) resolve();
    });
    void exited.then((code) => reject(new Error(`the worker exited (${code}) before it polled:\n${stderr}`)));
  });
  ready.catch(() => undefined);
  return {
    process: child,
    ready,
    exited,
    stderr: () => stderr,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
