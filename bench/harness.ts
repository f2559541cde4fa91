import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startDevServer } from '../src/dev/dev-server';

/** SQLite tuned for throughput, as load tests of the Temporal SDKs run their dev server. */
export const BENCH_SQLITE_PRAGMAS = ['journal_mode=WAL', 'synchronous=OFF'];

export interface BenchServer {
  /** The dev server, or a cluster (bench/cluster.ts): where clients and workers connect. */
  server: { address: string };
  client: Client;
  connection: Connection;
  /** CPU time (ms) and resident memory (bytes) of the server's processes together. */
  serverCpuMs(): number;
  serverRss(): number;
  stop(): Promise<void>;
}

/** A dev server with file persistence (a fresh SQLite file per run) and a client on it. */
export async function startBenchServer(port: number): Promise<BenchServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-bench-'));
  const server = await startDevServer({
    port,
    uiPort: null,
    dbFile: path.join(dir, 'bench.db'),
    logFile: path.join(dir, 'temporal.log'),
    sqlitePragmas: BENCH_SQLITE_PRAGMAS,
  });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  return {
    server,
    client,
    connection,
    serverCpuMs: () => cpuMsOf(server.process.pid),
    serverRss: () => rssOf(server.process.pid),
    async stop() {
      await connection.close();
      await server.stop();
    },
  };
}

export interface WorkerStats {
  cpuMs: number;
  rss: number;
  peakRss: number;
}

export interface WorkerProcess {
  child: ChildProcess;
  stats(): Promise<WorkerStats>;
  stop(): Promise<void>;
}

export interface WorkerProcessOptions {
  /** The per-endpoint retry budget (redeliver only). Default true: on, 10 retries/s with a burst of 20, as in production. */
  retryBudget?: boolean;
  /** Endpoint health reports, which also split the budget between workers (redeliver only). Default true. */
  endpointHealth?: boolean;
}

/** A redeliver or baseline worker in its own process (see worker-process.ts). */
export async function startWorkerProcess(
  kind: 'redeliver' | 'baseline',
  address: string,
  taskQueue: string,
  options: WorkerProcessOptions = {},
): Promise<WorkerProcess> {
  const flags = [...(options.retryBudget === false ? ['budget=off'] : []), ...(options.endpointHealth === false ? ['health=off'] : [])];
  return forkWorkerProcess('worker-process.js', [kind, address, taskQueue, ...flags]);
}

/**
 * A benchmark process of bench/ (its compiled `script`) that says 'ready' once it works and answers
 * 'stats' (process-stats.ts); stopped with SIGTERM.
 */
export async function forkWorkerProcess(script: string, args: string[]): Promise<WorkerProcess> {
  // REDELIVER_BENCH_CPU_PROF=<dir>: each process writes a V8 CPU profile there when it exits (--cpu-prof), each of
  // its threads one; REDELIVER_BENCH_CPU_PROF_INTERVAL=<µs>: the sampling interval (Node's default 1000)
  const profile = process.env.REDELIVER_BENCH_CPU_PROF;
  const interval = process.env.REDELIVER_BENCH_CPU_PROF_INTERVAL;
  const execArgv = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, ...(interval ? [`--cpu-prof-interval=${interval}`] : [])] : [];
  const child = fork(path.join(__dirname, script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  await new Promise<void>((resolve, reject) => {
    child.once('message', (m) => (m === 'ready' ? resolve() : reject(new Error(`unexpected ${String(m)}`))));
    child.once('exit', (code) => reject(new Error(`bench worker exited with ${code}`)));
  });
  return {
    child,
    stats: () =>
      new Promise<WorkerStats>((resolve) => {
        child.once('message', (m) => resolve(m as WorkerStats));
        child.send('stats');
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Resident memory of a process by pid (Linux), in bytes; 0 where /proc is unavailable. */
export function rssOf(pid: number | undefined): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.replace(/\D+/g, '')) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs `fn` over `items` with at most `concurrency` in flight. */
export async function pool<T, R>(items: T[], concurrency: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/** Polls a visibility count (of workflows, unless `counted` says otherwise) until it reaches `target`; returns when it did (epoch ms). */
export async function waitForCount(
  client: Client,
  query: string,
  target: number,
  timeoutMs: number,
  counted: (query: string) => Promise<{ count: number }> = (q) => client.workflow.count(q),
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { count } = await counted(query);
    if (count >= target) return Date.now();
    if (Date.now() > deadline) throw new Error(`timed out: ${count} of ${target} for ${query}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** CPU time (user + system) of a process by pid (Linux, at its 100 clock ticks a second), in ms; 0 where /proc is unavailable. */
export function cpuMsOf(pid: number | undefined): number {
  try {
    // the command name in parentheses may hold spaces: the fields counted here come after it
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
export const mb = (bytes: number) => round(bytes / (1024 * 1024), 1);
