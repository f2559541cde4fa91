import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../contract';
import { ensureTemporalCli } from './temporal-cli';
import { pingService } from '../temporal/sdk-adapter';

export interface DevServerOptions {
  /** gRPC port of the frontend. Default 7233. */
  port?: number;
  /** Port of the Web UI; `null` runs headless. Default port + 1000 (8233 for 7233). */
  uiPort?: number | null;
  /** SQLite file that keeps state across restarts; in memory when absent. */
  dbFile?: string;
  /** Where the server's own log goes; discarded when absent. */
  logFile?: string;
  log?: (line: string) => void;
  /** How long to wait for the server to answer. Default 60 s. */
  startTimeoutMs?: number;
  /** A codec server for the UI to decode payloads with (`redeliver codec-server`); none by default. */
  uiCodecEndpoint?: string;
  /** SQLite pragmas, e.g. ['journal_mode=WAL', 'synchronous=OFF'] for benchmarks. */
  sqlitePragmas?: string[];
  /** Task-queue fairness (FAIRNESS_SETTINGS), as `redeliver dev` runs it. Default true. */
  fairness?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Task-queue fairness (Temporal 1.32): deliveries carry their tenant as the fairness key (fairnessKeyOf),
 * and with these the server dispatches each tenant's backlog in turn instead of first come first served, so a
 * tenant's flood of failing attempts does not queue another tenant's behind it (docs/threat-model.md).
 */
export const FAIRNESS_SETTINGS = [
  'matching.useNewMatcher=true',
  'matching.enableFairness=true',
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
];

/** Starts `temporal server start-dev` (installing the CLI first if needed) and waits until it answers. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const port = options.port ?? 7233;
  const uiPort = options.uiPort === undefined ? port + 1000 : options.uiPort;
  const cli = await ensureTemporalCli(options.log);
  const args = devServerArgs(options, port, uiPort);
  // the dev server picks its other ports (HTTP API, metrics, the services' gRPC and membership) free a moment
  // before it listens on them; another process may take one in between: then it exits, and a new start picks anew
  for (let start = 1; ; start++) {
    try {
      return await startOnce(cli, args, options, port, uiPort);
    } catch (err) {
      if (!(err instanceof PortClash) || start === PORT_CLASH_STARTS) throw err;
      options.log?.(`${err.message}; starting it again`);
    }
  }
}

/** How many times a start whose ports were taken under it is made in all. */
const PORT_CLASH_STARTS = 3;

/** The dev server exited while starting because a port it listens on was taken. */
export class PortClash extends Error {}

function devServerArgs(options: DevServerOptions, port: number, uiPort: number | null): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn'];
  if (uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');
  if (uiPort !== null && options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  if (options.dbFile) {
    mkdirSync(path.dirname(path.resolve(options.dbFile)), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  for (const pragma of options.sqlitePragmas ?? []) args.push('--sqlite-pragma', pragma);
  if (options.fairness ?? true) for (const setting of FAIRNESS_SETTINGS) args.push('--dynamic-config-value', setting);
  for (const key of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${searchAttributeTypeName(key.type)}`);
  return args;
}

/** One start: spawns the server and waits until it answers; an exit while starting throws with the output's last lines. */
async function startOnce(cli: string, args: string[], options: DevServerOptions, port: number, uiPort: number | null): Promise<DevServer> {
  const address = `127.0.0.1:${port}`;
  const chosenPorts = uiPort === null ? [port] : [port, uiPort];
  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = keepOutput(child, options.logFile);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  let exitCode: number | undefined;
  void exited.then((code) => (exitCode = code ?? -1));
  try {
    await waitUntilServing(address, {
      name: 'the Temporal dev server',
      timeoutMs: options.startTimeoutMs ?? 60_000,
      intervalMs: 250,
      failed: () => (exitCode === undefined ? undefined : exitedWhileStarting(exitCode, chosenPorts, output.last())),
    });
  } catch (err) {
    await stop();
    throw err;
  }
  output.stopKeeping();
  return { address, uiUrl: uiPort === null ? null : `http://127.0.0.1:${uiPort}`, process: child, stop };
}

/**
 * The error for a server that exited while starting: a PortClash when a port it picked itself was taken (a
 * port the caller chose, frontend or UI, stays taken: that is the caller's to mend, not a start's to retry).
 */
export function exitedWhileStarting(exitCode: number, chosenPorts: number[], lastOutput: string): Error {
  const said = lastOutput.trim() ? `; it said: ${lastOutput.trim()}` : '';
  const message = `the Temporal dev server on port ${chosenPorts[0]} exited with code ${exitCode} while starting${said}`;
  const clash = /address already in use/i.test(lastOutput);
  const chosenTaken = chosenPorts.some((port) => new RegExp(`:${port}\\b`).test(lastOutput));
  return clash && !chosenTaken ? new PortClash(message) : new Error(message);
}

/** Sends the server's output to `logFile` (or drops it), keeping its last 2 KB while it starts, for an error to quote. */
function keepOutput(child: ChildProcess, logFile: string | undefined): { last(): string; stopKeeping(): void } {
  let last = '';
  const keep = (chunk: Buffer) => (last = (last + chunk.toString('utf8')).slice(-2048));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  if (logFile) {
    mkdirSync(path.dirname(logFile), { recursive: true });
    const out = createWriteStream(logFile, { flags: 'a' });
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
  } else {
    child.stdout?.resume();
    child.stderr?.resume();
  }
  return {
    last: () => last,
    stopKeeping: () => {
      child.stdout?.off('data', keep);
      child.stderr?.off('data', keep);
    },
  };
}

export interface WaitUntilServingOptions {
  /** What is starting, for the timeout's message, e.g. 'the Temporal dev server'. */
  name: string;
  /** How long to keep trying. */
  timeoutMs: number;
  /** The pause after a try that failed. */
  intervalMs: number;
  /** Asked before each try: an error to give up with at once (the process exited, or never started). */
  failed?: () => Error | undefined;
  /** For the connections the tries open, e.g. keepalive pings that the server's policy allows. */
  channelArgs?: ConnectionOptions['channelArgs'];
}

/**
 * Waits until a Temporal frontend at `address` answers `GetSystemInfo`: the port may be open before the
 * server serves, so a try is a real call on a fresh connection, closed again after it. Throws
 * `failed()`'s error as soon as there is one, and the last try's error once `timeoutMs` has passed.
 */
export async function waitUntilServing(address: string, options: WaitUntilServingOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const failed = options.failed?.();
    if (failed) throw failed;
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000, channelArgs: options.channelArgs });
      try {
        await pingService(connection);
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, options.intervalMs));
    }
  }
  throw new Error(`${options.name} did not answer at ${address} within ${options.timeoutMs} ms: ${String(lastError)}`);
}

/** A search attribute type as the temporal CLI and its scripts name it (`Keyword`, `Int`, …). */
export function searchAttributeTypeName(type: string): string {
  // SDK value types are SCREAMING_CASE; the CLI wants Text, Keyword, Int, Double, Bool, Datetime, KeywordList
  const names: Record<string, string> = {
    TEXT: 'Text',
    KEYWORD: 'Keyword',
    INT: 'Int',
    DOUBLE: 'Double',
    BOOL: 'Bool',
    DATETIME: 'Datetime',
    KEYWORD_LIST: 'KeywordList',
  };
  const name = names[type];
  if (!name) throw new Error(`unknown search attribute type ${type}`);
  return name;
}
