import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { clusterDown, clusterUp, stopService, type ClusterState } from '../src/cluster/cluster';
import { POSTGRES_USER } from '../src/cluster/postgres';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { freePort } from '../src/dev/ports';
import { cpuMsOf, round, rssOf, type BenchServer } from './harness';
import { parkedCapacity, type ParkedRow } from './parked';
import { redeliverBatchVolume, redeliverSingleVolume, type RedeliverVolumeRow } from './redeliver-volume';
import { timerPrecision, type TimerPrecisionRow } from './timer-precision';

/** One server's figures in section 7. */
export interface ClusterBenchRow {
  server: 'dev server' | 'cluster';
  /** Deliveries that succeed at once, one workflow each. */
  single: RedeliverVolumeRow;
  /** Messages that succeed at once, in batches of 500. */
  batch: RedeliverVolumeRow;
  timers: TimerPrecisionRow;
  parked: ParkedRow[];
  /** The cluster: its CPU per delivery of the single run, by process (ms), to see where the server's time goes. */
  cpuByService?: Record<string, number>;
  /** The cluster, during the timer run: history's own view, mean ms (timer tasks' wait in their queue; a persistence request). */
  timerTaskQueueMs?: number;
  persistenceMs?: number;
}

export interface ClusterBenchSizes {
  single: number;
  batch: number;
  timers: number;
  timerWindowMs: number;
  parked: number[];
  parkedBudgetMs: number;
}

/**
 * The same work on the dev server and on a Temporal cluster on PostgreSQL (`redeliver cluster up`: frontend,
 * two history hosts, matching and worker, each a process of its own), one after the other for each figure so
 * that both see the machine in the same state.
 */
export async function clusterComparison(dev: BenchServer, sink: FlakyEndpoint, sizes: ClusterBenchSizes): Promise<ClusterBenchRow[]> {
  const cluster = await startClusterBench();
  try {
    const servers = [
      { name: 'dev server' as const, bench: dev },
      { name: 'cluster' as const, bench: cluster },
    ];
    const rows = servers.map(({ name }) => ({ server: name }) as ClusterBenchRow);
    for (const [i, { name, bench }] of servers.entries()) {
      console.log(`  ${name}: ${sizes.single} single deliveries ...`);
      const before = cluster.cpuByService();
      rows[i]!.single = await redeliverSingleVolume(bench, sink, sizes.single);
      if (bench === cluster) rows[i]!.cpuByService = perDelivery(before, cluster.cpuByService(), sizes.single);
    }
    for (const [i, { name, bench }] of servers.entries()) {
      console.log(`  ${name}: ${sizes.batch} messages in batches ...`);
      rows[i]!.batch = await redeliverBatchVolume(bench, sink, sizes.batch);
    }
    for (const [i, { name, bench }] of servers.entries()) {
      console.log(`  ${name}: timer precision with ${sizes.timers} waiting ...`);
      const before = bench === cluster ? await cluster.historyMetrics() : undefined;
      rows[i]!.timers = (await timerPrecision(bench, sink, [sizes.timers], sizes.timerWindowMs))[0]!;
      if (before) Object.assign(rows[i]!, meanLatencies(before, await cluster.historyMetrics()));
    }
    for (const [i, { name, bench }] of servers.entries()) {
      console.log(`  ${name}: parked capacity ...`);
      rows[i]!.parked = await parkedCapacity(bench, sink, sizes.parked, sizes.parkedBudgetMs);
    }
    return rows;
  } finally {
    await cluster.stop();
  }
}

export type ClusterBench = BenchServer & {
  cpuByService(): Record<string, number>;
  historyMetrics(): Promise<HistogramSums>;
  /** The cluster's PostgreSQL: where it listens, the user Temporal connects as (a superuser), its postmaster's pid. */
  postgres: { port: number; user: string; password: string; pid: number };
  /** Stops Temporal's services, PostgreSQL goes on (bench/peers.ts: pg-boss on the same PostgreSQL, alone). */
  stopTemporal(): Promise<void>;
};

/** A fresh cluster in a temporary folder, with a client on it; its CPU and memory are every Temporal service's and PostgreSQL's. */
export async function startClusterBench(): Promise<ClusterBench> {
  const dir = path.join(tmpdir(), `redeliver-bench-cluster-${randomUUID().slice(0, 8)}`);
  const state = await clusterUp({ dir, port: await freePort(), historyHosts: 2, uiPort: null, log: (line) => console.log(`  ${line}`) });
  const connection = await Connection.connect({ address: state.address });
  const cpuByService = () => Object.fromEntries(state.services.map((s) => [s.name, serviceCpuMs(s.name, s.pid)]));
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    server: { address: state.address },
    client: new Client({ connection }),
    connection,
    serverCpuMs: () => sum(Object.values(cpuByService())),
    serverRss: () => sum(state.services.map((s) => rssOf(s.pid))),
    cpuByService,
    historyMetrics: () => historyMetrics(state),
    postgres: (() => {
      const pg = state.services.find((s) => s.name === 'postgresql')!;
      return { port: pg.port, user: POSTGRES_USER, password: state.postgres.password, pid: pg.pid };
    })(),
    async stopTemporal() {
      for (const s of state.services.filter((s) => s.name !== 'postgresql')) await stopService(dir, s.name);
    },
    async stop() {
      await connection.close();
      await clusterDown(dir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A service's CPU ms. PostgreSQL serves each connection in a process of its own: the postmaster's figure adds
 * its live children and the ones it has reaped (`cutime`, `cstime`).
 */
function serviceCpuMs(name: string, pid: number): number {
  return name === 'postgresql' ? postgresCpuMs(pid) : cpuMsOf(pid);
}

/** PostgreSQL's CPU ms: its postmaster's, its live children's (a process per connection) and its reaped children's. */
export function postgresCpuMs(pid: number): number {
  const reaped = (() => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  })();
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((child) => {
      try {
        return Number(readFileSync(`/proc/${child}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === pid;
      } catch {
        return false;
      }
    });
  return cpuMsOf(pid) + reaped + children.reduce((total, child) => total + cpuMsOf(Number(child)), 0);
}

function perDelivery(before: Record<string, number>, after: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([name, ms]) => [name, round((ms - (before[name] ?? 0)) / n, 3)]));
}

/** Sums and counts of two of the history hosts' histograms, added over the hosts. */
interface HistogramSums {
  timerQueue: { sum: number; count: number };
  persistence: { sum: number; count: number };
}

/**
 * Scrapes every history host's Prometheus endpoint: `task_latency_queue` of its timer tasks (how long a due
 * timer waited before it was processed) and `persistence_latency` (each request to PostgreSQL), in seconds.
 */
async function historyMetrics(state: ClusterState): Promise<HistogramSums> {
  const sums: HistogramSums = { timerQueue: { sum: 0, count: 0 }, persistence: { sum: 0, count: 0 } };
  for (const host of state.services.filter((s) => s.name.startsWith('history-'))) {
    const text = await (await fetch(`http://127.0.0.1:${host.metricsPort}/metrics`)).text();
    for (const line of text.split('\n')) {
      const [series, value] = [line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))];
      const into =
        series.startsWith('task_latency_queue_') && /operation="Timer/.test(series)
          ? sums.timerQueue
          : series.startsWith('persistence_latency_')
            ? sums.persistence
            : undefined;
      if (into && series.includes('_sum{')) into.sum += value;
      if (into && series.includes('_count{')) into.count += value;
    }
  }
  return sums;
}

function meanLatencies(before: HistogramSums, after: HistogramSums): Pick<ClusterBenchRow, 'timerTaskQueueMs' | 'persistenceMs'> {
  const mean = (key: keyof HistogramSums) => {
    const count = after[key].count - before[key].count;
    return count > 0 ? round(((after[key].sum - before[key].sum) / count) * 1000, 1) : NaN;
  };
  return { timerTaskQueueMs: mean('timerQueue'), persistenceMs: mean('persistence') };
}
