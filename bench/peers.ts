import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findPostgres } from '../src/cluster/postgres';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import { bullmqVolume } from './bullmq';
import { postgresCpuMs, startClusterBench, type ClusterBench } from './cluster';
import { round } from './harness';
import { redeliverOutage, type OutageResults, type OutageRow, type OutageSizes } from './outage';
import { pgbossOutage, pgbossVolume, pssOf, type PeersPostgres } from './pgboss';
import { redeliverBatchVolume } from './redeliver-volume';
import { sinkAlone } from './volume';
import type { VolumeRow } from './volume-row';

const run = promisify(execFile);

/**
 * The durable peers (issue 32): redeliver on the Temporal cluster's PostgreSQL against pg-boss on the same
 * PostgreSQL (fsync and synchronous_commit on), BullMQ on its Redis, the sink alone; then section 10's outage on
 * redeliver (cluster) and pg-boss.
 */
export interface PeersSizes {
  messages: number;
  outage: OutageSizes;
}

/** A row of the peers table: a volume row, where its queue kept its data, and PostgreSQL's CPU share. */
export type PeerRow = VolumeRow & {
  /** The store the system's queue ran on in this run. */
  store: string;
  /** PostgreSQL's CPU ms per message (the postmaster and its children): all of pg-boss's server, part of the cluster's. */
  postgresCpuMsPerMessage?: number;
};

export interface PeersResults {
  /** The one PostgreSQL of the run, as it reported itself: its version and the settings that make a commit durable. */
  postgres: { version: string; settings: Record<string, string> };
  rows: PeerRow[];
  outage: {
    scenario: OutageSizes;
    redeliver: OutageResults['redeliver'];
    /** Absent when its run failed: `pgbossError` says why. */
    pgboss?: OutageRow;
    pgbossError?: string;
  };
}

/** The settings read back from the running PostgreSQL, reported with the results. */
const DURABILITY_SETTINGS = ['fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'shared_buffers', 'max_connections'];

export async function peers(sink: FlakyEndpoint, sizes: PeersSizes): Promise<PeersResults> {
  const rows: PeerRow[] = [];
  const add = (row: PeerRow) => {
    rows.push(row);
    console.log(`  peers ${row.system} (${row.store}) ${row.messages}: ${row.perSecond}/s`);
    sink.received.length = 0;
  };
  add({ ...(await sinkAlone(sink, sizes.messages)), store: 'none' });
  add({ ...(await bullmqVolume(sink, sizes.messages)), store: 'Redis (AOF, fsync every second)' });
  console.log('  starting a Temporal cluster on PostgreSQL (redeliver cluster up) ...');
  const cluster = await startClusterBench();
  try {
    const pg = peersPostgres(cluster);
    // PostgreSQL's CPU read at the same moments as the cluster's (the run reads the server's CPU at its start and end)
    const pgAt: number[] = [];
    const measured: ClusterBench = { ...cluster, serverCpuMs: () => (pgAt.push(pg.cpuMs()), cluster.serverCpuMs()) };
    const batch = await redeliverBatchVolume(measured, sink, sizes.messages);
    const postgresCpuMsPerMessage = round((pgAt.at(-1)! - pgAt[0]!) / sizes.messages, 3);
    add({ ...batch, store: 'Temporal cluster on PostgreSQL', postgresCpuMsPerMessage });
    console.log(`  peers outage: redeliver on the cluster ...`);
    const redeliver = await redeliverOutage(cluster, sink, sizes.outage);
    sink.received.length = 0;
    console.log(`  peers outage redeliver: drained ${redeliver.backlog} in ${redeliver.drainSeconds} s`);
    // pg-boss alone on the same PostgreSQL: Temporal's services would add their own queries to its CPU
    await cluster.stopTemporal();
    await run(createdbPath(), ['-h', '127.0.0.1', '-p', String(cluster.postgres.port), '-U', cluster.postgres.user, 'pgboss'], {
      env: { ...process.env, PGPASSWORD: cluster.postgres.password },
    });
    // an ES module: loaded here, not by the sections that do not use it
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss(pg.connection);
    boss.on('error', (err) => console.error('pg-boss:', err));
    await boss.start();
    try {
      const postgres = await postgresSettings(boss.getDb());
      const durable = postgres.settings.fsync === 'on' && postgres.settings.synchronous_commit === 'on';
      if (!durable) throw new Error(`PostgreSQL runs with ${JSON.stringify(postgres.settings)}: fsync and synchronous_commit must be on`);
      const row = await pgbossVolume(pg, boss, sink, sizes.messages);
      add({ ...row, store: 'PostgreSQL', postgresCpuMsPerMessage: row.serverCpuMsPerMessage! });
      console.log(`  peers outage: pg-boss ...`);
      // a failure here is a finding (what pg-boss did under the outage), kept with the figures measured before it
      const pgboss = await pgbossOutage(pg, boss, sink, sizes.outage).then(
        (row) => ({ pgboss: row }),
        (err: Error) => ({ pgbossError: err.message }),
      );
      sink.received.length = 0;
      console.log(`  peers outage pg-boss: ${JSON.stringify(pgboss).slice(0, 300)}`);
      return { postgres, rows, outage: { scenario: sizes.outage, redeliver, ...pgboss } };
    } finally {
      await boss.stop({ graceful: false, timeout: 5_000 });
    }
  } finally {
    await cluster.stop();
  }
}

function peersPostgres(cluster: ClusterBench): PeersPostgres {
  const { port, user, password, pid } = cluster.postgres;
  return {
    connection: { host: '127.0.0.1', port, user, password, database: 'pgboss' },
    cpuMs: () => postgresCpuMs(pid),
    pss: () => pssOf(pid),
  };
}

/** `createdb` beside the server's programs (Debian: /usr/lib/postgresql/<major>/bin), else on the PATH. */
function createdbPath(): string {
  const beside = path.join(findPostgres(), 'createdb');
  return existsSync(beside) ? beside : 'createdb';
}

async function postgresSettings(db: { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> }) {
  const { rows } = await db.executeSql('SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)', [DURABILITY_SETTINGS]);
  const settings = Object.fromEntries(
    (rows as { name: string; setting: string; unit: string | null }[]).map((r) => [
      r.name,
      r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024} MB` : r.setting,
    ]),
  );
  const version = ((await db.executeSql('SHOW server_version')).rows[0] as { server_version: string }).server_version;
  return { version, settings };
}

function table(header: string[], rows: (string | number)[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
const x = (a: number, b: number) => (b === 0 || !Number.isFinite(a) || !Number.isFinite(b) ? '—' : `${(a / b).toFixed(2)}×`);
const cell = (v: number | undefined) => (v === undefined ? '—' : v);

/** The section in results.md. */
export function peersReport({ postgres, rows, outage }: PeersResults): string[] {
  const pgboss = rows.find((r) => r.system === 'pg-boss')!;
  const settings = Object.entries(postgres.settings)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');
  const parts = ['', '## Durable peers: redeliver and pg-boss on one PostgreSQL, BullMQ on Redis', ''];
  parts.push(
    table(
      [
        'system',
        'store',
        'messages',
        'messages /s',
        'vs pg-boss',
        'worker CPU ms / message',
        'vs pg-boss',
        'server CPU ms / message',
        'of which PostgreSQL',
        'worker peak RSS MB',
        's',
      ],
      rows.map((r) => [
        r.system,
        r.store,
        r.messages,
        r.perSecond,
        r.system === 'sink-alone' ? '' : x(r.perSecond, pgboss.perSecond),
        r.workerCpuMsPerMessage,
        r.system === 'sink-alone' ? '' : x(r.workerCpuMsPerMessage, pgboss.workerCpuMsPerMessage),
        cell(r.serverCpuMsPerMessage),
        cell(r.postgresCpuMsPerMessage),
        r.workerPeakRssMb,
        r.seconds,
      ]),
    ),
    '',
    `One PostgreSQL ${postgres.version} (Debian's package), started fresh for the run by \`redeliver cluster up\` in a temporary folder on a free loopback port, as read back from it: ${settings} (PostgreSQL's defaults: every commit is flushed to disk before it is acknowledged). redeliver: the Temporal cluster of section 7 on it (frontend, two history hosts, matching, worker), \`submitBatch\` in batches of 500, a worker in its own process; server CPU is every Temporal service's and PostgreSQL's. pg-boss (npm \`pg-boss\`, a database of its own on the same PostgreSQL, run after Temporal's services were stopped, so that PostgreSQL served it alone): jobs inserted with \`insert\` in chunks of 1,000 to a queue with \`retryLimit: 9, retryDelay: 1, retryBackoff: true\` (its exponential backoff, whole seconds) and a dead letter queue; a worker in its own process, \`work()\` with \`batchSize: 10, localConcurrency: 5\` (up to 50 jobs in flight, BullMQ's concurrency), \`burstWhenBatchFull\`, \`perJobResults\` (each job settled on its own), \`pollingIntervalSeconds: 0.5\` (its shortest; no LISTEN/NOTIFY: a retry comes due without one, and a NOTIFY in every send's commit serializes the commits), POSTing with undici (keep-alive); server CPU is PostgreSQL's (the postmaster and every child, from the first insert until the sink had every message). BullMQ and sink-alone: section 6's (redis-server with the append-only file fsynced once a second, not on every write; the plain undici client's columns are the load generator's). Messages /s: from the first submit, add or insert until the sink had answered every message with a 2xx.`,
  );
  const alone = rows.find((r) => r.system === 'sink-alone');
  const best = Math.max(...rows.filter((r) => r.system !== 'sink-alone').map((r) => r.perSecond));
  if (alone)
    parts.push(
      '',
      `Sink alone, ${alone.messages} POSTs: ${alone.perSecond}/s, ${x(alone.perSecond, best)} the fastest system's rate${alone.sinkCpuMsPerMessage ? ` (the sink spent ${alone.sinkCpuMsPerMessage} ms CPU per POST; the load generator ${alone.workerCpuMsPerMessage} ms)` : ''}: neither is what limits the systems.`,
    );
  parts.push(...peersOutageReport(outage, rows));
  return parts;
}

function peersOutageReport({ scenario: s, redeliver: r, pgboss: p, pgbossError }: PeersResults['outage'], rows: PeerRow[]): string[] {
  const title = `### Outage on the same PostgreSQL: ${s.perSecond} telemetry messages/s for ${s.seconds} s, endpoint down from ${s.downFrom} s to ${s.downUntil} s`;
  if (!p)
    return [
      '',
      title,
      '',
      `pg-boss's run failed: ${pgbossError}. redeliver (cluster): delivered ${r.delivered} of ${r.offered}, drain ${r.drainSeconds} s, ${r.requestsWhileDown} requests while down.`,
    ];
  const healthy = (system: VolumeRow['system']) => rows.find((row) => row.system === system)?.perSecond ?? NaN;
  const delivered = (row: OutageRow) => (row.complete ? row.delivered : `${row.delivered} (timed out)`);
  const ended = (row: OutageRow) => {
    const counts = Object.entries(row.ended);
    const total = counts.reduce((sum, [, n]) => sum + n, 0);
    return `${total} (${counts.map(([what, n]) => `${what} ${n}`).join(', ') || 'none'})`;
  };
  const line = (what: string, a: number | string | null, b: number | string | null, ratio = true) => [
    what,
    a ?? '—',
    b ?? '—',
    ratio && typeof a === 'number' && typeof b === 'number' ? x(b, a) : '',
  ];
  const idealRedeliver = r.backlog / healthy('redeliver-batch');
  const idealPgboss = p.backlog / healthy('pg-boss');
  return [
    '',
    title,
    '',
    table(
      ['figure', 'redeliver (cluster)', 'pg-boss', 'pg-boss ÷ redeliver'],
      [
        line('offered (achieved /s)', `${r.offered} (${r.offeredPerSecond}/s)`, `${p.offered} (${p.offeredPerSecond}/s)`, false),
        line('delivered (distinct Message-Ids with a 2xx)', delivered(r), delivered(p), false),
        line('ended undelivered', ended(r), ended(p), false),
        line('duplicates (a 2xx again)', r.duplicates, p.duplicates, false),
        line('backlog at recovery', r.backlog, p.backlog, false),
        line('drain after recovery s', r.drainSeconds, p.drainSeconds),
        line(
          'drain ÷ ideal (backlog ÷ its healthy rate above)',
          x(r.drainSeconds ?? NaN, idealRedeliver),
          x(p.drainSeconds ?? NaN, idealPgboss),
          false,
        ),
        line('requests while down (503s)', r.requestsWhileDown, p.requestsWhileDown),
        line('requests per message offered', round(r.requests / r.offered, 2), round(p.requests / p.offered, 2)),
        line('worker peak RSS MB', r.workerPeakRssMb, p.workerPeakRssMb),
        line('server peak MB (cluster: RSS of every service; pg-boss: PostgreSQL PSS)', r.serverPeakRssMb, p.serverPeakRssMb),
      ],
    ),
    '',
    `Section 10's scenario (bench/outage.ts) on each: a producer in its own process offers telemetry at a steady rate, the sink answers 503 on the run's path while it is down and 202 otherwise. redeliver: through \`Redeliver.batcher()\` to the cluster above, one worker process, retry budget, breaker and outage holds on as by default; ended undelivered are its dead letters by state (\`expired\`: past the message's max age). pg-boss: the producer \`send\`s each message (one INSERT and its commit; a pool of 50 connections, a send that fails sent again) to a queue with pg-boss's exponential backoff (\`retryDelay: 1, retryBackoff: true\`: a retry waits between 2^n ÷ 2 and 2^n s, no cap) and 19 retries (BullMQ's 20 attempts in section 10), so that no job runs out of them during the outage, and a dead letter queue; worker as above. Its ended undelivered are its failed jobs (out of retries, each copied to the dead letter queue). Ideal drain: the backlog ÷ the system's messages /s in the table above (${round(idealRedeliver, 1)} s for redeliver, ${round(idealPgboss, 1)} s for pg-boss). redeliver's workflows: ${r.workflows.deliveries.startedWhileDown + r.workflows.holds.startedWhileDown} started while the endpoint was down, ${r.workflows.holds.runs} holds.`,
  ];
}
