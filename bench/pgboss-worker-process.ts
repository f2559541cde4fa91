/**
 * pg-boss's worker for the peers benchmark (bench/peers.ts), in a process of its own like BullMQ's
 * (bullmq-worker-process.ts): `node pgboss-worker-process.js <connection JSON> <queue>`. Written as a user
 * would from pg-boss's guide for many short jobs: `work()` with batches of 10 on 5 local workers (up to 50 jobs
 * in flight, BullMQ's concurrency), fetching again at once while a batch comes back full, else polling
 * every 0.5 s; each job POSTs its body with undici over keep-alive connections and is settled on its own
 * (`perJobResults`): a non-2xx answer or a network error fails that job, and pg-boss retries it with the
 * queue's own exponential backoff.
 */
import { PgBoss, type Job, type JobResult } from 'pg-boss';
import { Agent } from 'undici';
import { PGBOSS_WORK_OPTIONS, type PgBossConnection } from './pgboss-options';
import { postJob, type PostJob } from './peer-post';
import { answerStats } from './process-stats';

async function main(): Promise<void> {
  const [connection, queue] = process.argv.slice(2);
  if (!connection || !queue) throw new Error('usage: pgboss-worker-process <connection JSON> <queue>');
  const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });
  const boss = new PgBoss(JSON.parse(connection) as PgBossConnection);
  boss.on('error', (err) => console.error('pg-boss worker:', err));
  await boss.start();
  await boss.work<PostJob>(queue, PGBOSS_WORK_OPTIONS, (jobs) => Promise.all(jobs.map((job) => settle(job, dispatcher))));
  answerStats();
  process.once('SIGTERM', () => void boss.stop({ graceful: true, timeout: 5_000 }).then(() => process.exit(0)));
  process.send?.('ready');
}

async function settle(job: Job<PostJob>, dispatcher: Agent): Promise<JobResult> {
  try {
    await postJob(job.data, dispatcher);
    return { id: job.id, status: 'completed' };
  } catch (err) {
    return { id: job.id, status: 'failed', output: { message: (err as Error).message } };
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
