import { randomUUID } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { FlakyEndpoint } from '../src/demo/flaky-endpoint';
import type { PostJob } from './peer-post';
import { cpuMsOf, forkWorkerProcess } from './harness';
import { startRedis } from './redis';
import { volumeRow, waitForDelivered, type VolumeRow } from './volume-row';

/** What a user would pick instead of redeliver, configured as its guide suggests for an HTTP delivery job. */
export const JOB_OPTIONS: JobsOptions = { attempts: 10, backoff: { type: 'exponential', delay: 200 }, removeOnComplete: true };
/** Jobs per addBulk call: a producer with many messages adds them in bulk, one round trip a chunk. */
const ADD_CHUNK = 1_000;

/**
 * BullMQ on a fresh local Redis (append-only file on): `messages` jobs added in bulk, each POSTed to the
 * sink by a BullMQ worker in its own process (bullmq-worker-process.ts, concurrency 50). Messages per
 * second from the first add until the sink has answered every message with a 2xx.
 */
export async function bullmqVolume(sink: FlakyEndpoint, messages: number): Promise<VolumeRow> {
  const redis = await startRedis();
  const name = `volume-${messages}-${randomUUID().slice(0, 6)}`;
  const worker = await forkWorkerProcess('bullmq-worker-process.js', [String(redis.port), name]);
  const queue = new Queue<PostJob>(name, { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    await queue.waitUntilReady();
    const pathname = `/volume/${name}`;
    const jobs = Array.from({ length: messages }, (_, i) => {
      const messageId = `m${i}`;
      return {
        name: 'post',
        data: { url: `${sink.url}${pathname}`, messageId, body: JSON.stringify({ id: messageId }) },
        opts: JOB_OPTIONS,
      };
    });
    const before = await worker.stats();
    const redisBefore = cpuMsOf(redis.pid);
    const started = Date.now();
    const delivered = waitForDelivered(sink, pathname, messages, 60_000 + messages * 20);
    // awaited below; if adding fails first, that error is the one to report
    delivered.catch(() => undefined);
    for (let i = 0; i < jobs.length; i += ADD_CHUNK) await queue.addBulk(jobs.slice(i, i + ADD_CHUNK));
    const finished = await delivered;
    const after = await worker.stats();
    return volumeRow(
      'bullmq',
      messages,
      { started, finished },
      { before, after },
      { serverCpuMsPerMessage: cpuMsOf(redis.pid) - redisBefore },
    );
  } finally {
    await queue.close();
    await worker.stop();
    await redis.stop();
  }
}
