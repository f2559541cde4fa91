/**
 * BullMQ's worker for the volume benchmark, in a process of its own like redeliver's (worker-process.ts):
 * `node bullmq-worker-process.js <redisPort> <queue>`. Written as a new user would from BullMQ's guide:
 * one Worker, concurrency 50, each job POSTs its body with undici over keep-alive connections; a non-2xx
 * answer or a network error fails the job, and BullMQ retries it with the job's own backoff.
 */
import { Worker } from 'bullmq';
import { Agent } from 'undici';
import { postJob, type PostJob } from './peer-post';
import { answerStats } from './process-stats';

async function main(): Promise<void> {
  const [port, queue] = process.argv.slice(2);
  if (!port || !queue) throw new Error('usage: bullmq-worker-process <redisPort> <queue>');
  const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });
  const worker = new Worker<PostJob>(queue, (job) => postJob(job.data, dispatcher), {
    connection: { host: '127.0.0.1', port: Number(port) },
    concurrency: 50,
  });
  worker.on('error', (err) => console.error('bullmq worker:', err));
  await worker.waitUntilReady();
  answerStats();
  process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
  process.send?.('ready');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
