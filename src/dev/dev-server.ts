import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../workflows/definitions';
import { ensureTemporalCli } from './temporal-cli';

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
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` (installing the CLI first if needed) and waits until it answers. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const port = options.port ?? 7233;
  const uiPort = options.uiPort === undefined ? port + 1000 : options.uiPort;
  const cli = await ensureTemporalCli(options.log);
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn'];
  if (uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');
  if (uiPort !== null && options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  if (options.dbFile) {
    mkdirSync(path.dirname(path.resolve(options.dbFile)), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  for (const pragma of options.sqlitePragmas ?? []) args.push('--sqlite-pragma', pragma);
  for (const key of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${searchAttributeTypeName(key.type)}`);

  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  if (options.logFile) {
    mkdirSync(path.dirname(options.logFile), { recursive: true });
    const out = createWriteStream(options.logFile, { flags: 'a' });
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
  } else {
    child.stdout?.resume();
    child.stderr?.resume();
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const address = `127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitUntilServing(address, options.startTimeoutMs ?? 60_000, exited);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, uiUrl: uiPort === null ? null : `http://127.0.0.1:${uiPort}`, process: child, stop };
}

async function waitUntilServing(address: string, timeoutMs: number, exited: Promise<number | null>): Promise<void> {
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code ?? -1));
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`the Temporal dev server exited with code ${exitCode} while starting (is port ${address} taken?)`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`the Temporal dev server did not answer at ${address} within ${timeoutMs} ms: ${String(lastError)}`);
}

function searchAttributeTypeName(type: string): string {
  // SDK value types are SCREAMING_CASE; the CLI wants Text, Keyword, Int, Double, Bool, Datetime, KeywordList
  const names: Record<string, string> = {
    TEXT: 'Text', KEYWORD: 'Keyword', INT: 'Int', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList',
  };
  const name = names[type];
  if (!name) throw new Error(`unknown search attribute type ${type}`);
  return name;
}
