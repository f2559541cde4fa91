import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** How a cluster's process is started: kept in its state file, so that it can be started again the same way. */
export interface ProcessSpec {
  command: string;
  args: string[];
  /** Its whole environment. */
  env: Record<string, string>;
  /** Where its stdout and stderr go (appended). */
  logFile: string;
  /** Run as this user and group (PostgreSQL refuses to run as root). */
  uid?: number;
  gid?: number;
}

/**
 * Starts a process that outlives this one (`redeliver cluster up` returns while the cluster runs): its own
 * process group, so that a Ctrl-C in the terminal that started it does not reach it, output to its log.
 */
export function spawnDetached(spec: ProcessSpec): number {
  mkdirSync(path.dirname(spec.logFile), { recursive: true });
  const log = openSync(spec.logFile, 'a');
  try {
    const child = spawn(spec.command, spec.args, {
      detached: true,
      stdio: ['ignore', log, log],
      env: spec.env,
      ...(spec.uid !== undefined && { uid: spec.uid, gid: spec.gid }),
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${spec.command} (see ${spec.logFile})`);
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/**
 * Whether `pid` is a live process running `command`. The command is checked so that a pid the system gave
 * to another process since (after a reboot, say) is never taken for, or signalled as, a cluster's.
 */
export function isRunning(pid: number, command: string): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // a zombie has exited; its parent has not collected it yet
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!;
    return argv0 === command || path.basename(argv0) === path.basename(command);
  } catch {
    return false;
  }
}

/** Sends `signal`, waits up to `graceMs` for the process to end, then kills it. Resolves once it is gone. */
export async function stopProcess(pid: number, command: string, signal: NodeJS.Signals = 'SIGTERM', graceMs = 20_000): Promise<void> {
  if (!isRunning(pid, command)) return;
  process.kill(pid, signal);
  const deadline = Date.now() + graceMs;
  let killed = signal === 'SIGKILL';
  while (isRunning(pid, command)) {
    if (!killed && Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      killed = true;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
