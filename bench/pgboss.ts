import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { PgBoss } from 'pg-boss';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import type { PostJob } from './peer-post';
import { forkWorkerProcess, mb } from './harness';
import { runOutage, type OutageRow, type OutageSizes } from './outage';
import { PGBOSS_QUEUE_OPTIONS, type PgBossConnection } from './pgboss-options';
import { volumeRow, waitForDelivered, type VolumeRow } from './volume-row';

/** Jobs per `insert` call: a producer with many messages inserts them in bulk, one statement a chunk (BullMQ's addBulk: 1,000). */
const INSERT_CHUNK = 1_000;

/** The PostgreSQL pg-boss runs on: where it connects, and its processes' CPU and memory. */
export interface PeersPostgres {
  connection: PgBossConnection;
  /** CPU ms of the postmaster and all its children, live and reaped. */
  cpuMs(): number;
  /** Proportional set size of the postmaster and its live children, bytes (shared buffers counted once). */
  pss(): number;
}

/** The queue's retries for the outage: as BullMQ's there (20 attempts), enough to outlast it. */
const PGBOSS_OUTAGE_QUEUE = { ...PGBOSS_QUEUE_OPTIONS, retryLimit: 19 };

/** A queue and its dead letter queue (`<name>-dead`, where a job out of retries goes); its workers poll (no NOTIFY). */
async function createQueue(boss: PgBoss, name: string, options: typeof PGBOSS_QUEUE_OPTIONS | typeof PGBOSS_OUTAGE_QUEUE): Promise<void> {
  await boss.createQueue(`${name}-dead`);
  await boss.createQueue(name, { ...options, deadLetter: `${name}-dead` });
}

/** Jobs of `name` that ran out of retries (state `failed`). */
async function failedJobs(boss: PgBoss, name: string): Promise<number> {
  const { rows } = await boss.getDb().executeSql(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'failed'`, [name]);
  return (rows[0] as { n: number }).n;
}

/**
 * pg-boss on the benchmark's PostgreSQL: `messages` jobs inserted in chunks of 1,000, each POSTed to the sink by a
 * pg-boss worker in its own process (pgboss-worker-process.ts). Messages per second from the first insert until
 * the sink has answered every message with a 2xx; server CPU: PostgreSQL's over the same span.
 */
export async function pgbossVolume(pg: PeersPostgres, boss: PgBoss, sink: FlakyEndpoint, messages: number): Promise<VolumeRow> {
  const name = `volume-${messages}-${randomUUID().slice(0, 6)}`;
  await createQueue(boss, name, PGBOSS_QUEUE_OPTIONS);
  const worker = await forkWorkerProcess('pgboss-worker-process.js', [JSON.stringify(pg.connection), name]);
  try {
    const pathname = `/volume/${name}`;
    const jobs = Array.from({ length: messages }, (_, i) => {
      const messageId = `m${i}`;
      const data: PostJob = { url: `${sink.url}${pathname}`, messageId, body: JSON.stringify({ id: messageId }) };
      return { data };
    });
    const before = await worker.stats();
    const pgBefore = pg.cpuMs();
    const started = Date.now();
    const delivered = waitForDelivered(sink, pathname, messages, 60_000 + messages * 20);
    // awaited below; if inserting fails first, that error is the one to report
    delivered.catch(() => undefined);
    for (let i = 0; i < jobs.length; i += INSERT_CHUNK) await boss.insert(name, jobs.slice(i, i + INSERT_CHUNK));
    const finished = await delivered;
    const pgCpu = pg.cpuMs() - pgBefore;
    const after = await worker.stats();
    return volumeRow('pg-boss', messages, { started, finished }, { before, after }, { serverCpuMsPerMessage: pgCpu });
  } finally {
    await worker.stop();
  }
}

/**
 * Section 10's scenario on pg-boss (outage.ts's runOutage): the producer in its own process `send`s each message
 * at the steady rate to a queue with pg-boss's exponential backoff and 19 retries; worker as in pgbossVolume. Its
 * `ended.failed` are the jobs out of retries (each copied to the dead letter queue).
 */
export async function pgbossOutage(pg: PeersPostgres, boss: PgBoss, sink: FlakyEndpoint, sizes: OutageSizes): Promise<OutageRow> {
  const name = `outage-${randomUUID().slice(0, 6)}`;
  await createQueue(boss, name, PGBOSS_OUTAGE_QUEUE);
  const worker = await forkWorkerProcess('pgboss-worker-process.js', [JSON.stringify(pg.connection), name]);
  const producer = await forkWorkerProcess('producer-process.js', ['none', name]);
  let lastFailed = 0;
  try {
    const run = await runOutage(sink, producer, sizes, {
      system: 'pg-boss',
      path: `/outage/${name}`,
      into: { pgboss: { connection: pg.connection, queue: name } },
      // asked now and then while PostgreSQL may be too busy to lend a connection in time: then the last count stands
      ended: async () => (lastFailed = await failedJobs(boss, name).catch(() => lastFailed)),
      serverRss: () => pg.pss(),
    });
    const ended = { failed: await failedJobs(boss, name) };
    return { ...run.row, ended, workerPeakRssMb: mb((await worker.stats()).peakRss) };
  } finally {
    await producer.stop();
    await worker.stop();
  }
}

/** The live children of `pid` (PostgreSQL: a process per connection, and its background processes). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((child) => {
      try {
        return Number(readFileSync(`/proc/${child}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === pid;
      } catch {
        return false;
      }
    });
}

/** Proportional set size (bytes) of a process and its live children: shared memory divided among them. */
export function pssOf(pid: number): number {
  return [pid, ...childrenOf(pid)].reduce((total, p) => {
    try {
      const line = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8')
        .split('\n')
        .find((l) => l.startsWith('Pss:'));
      return total + (line ? Number(line.split(/\s+/)[1]) * 1024 : 0);
    } catch {
      return total;
    }
  }, 0);
}
