/**
 * A producer in a process of its own, for the latency and outage benchmarks (redeliver-volume.ts, outage.ts, peers.ts):
 * `node producer-process.js <address> <taskQueue>` (address `none`: no Temporal, for pg-boss and BullMQ runs only). On
 * a ProduceRun message it hands that many messages, one at a time at a steady rate, to a Redeliver batcher (or a
 * BullMQ queue, a pg-boss queue, or a batcher whose batches go nowhere), and
 * answers `{ submittedAt, acceptedAt }` (epoch ms of each `submit` call, by message index; when the last was
 * accepted), or `{ error }`. Its own process, so that its work does not delay the sink's clock in the benchmark's process.
 */
import { Client, Connection } from '@temporalio/client';
import { Queue, type JobsOptions } from 'bullmq';
import { Batcher } from '../src/batching/batcher';
import type { BatchHandle } from '../src/batching/batches';
import { Redeliver } from '../src/client/index';
import type { DeliveryInput } from '../src/delivery/types';
import type { PostJob } from './peer-post';
import { benchMessage } from './volume-message';
import type { PgBossConnection } from './pgboss-options';
import { answerStats } from './process-stats';

export interface ProduceRun {
  sinkUrl: string;
  path: string;
  /** Messages offered a second; 0: all at once, as fast as the producer can (a backlog handed over in one go). */
  perSecond: number;
  messages: number;
  /** The messages' tenant (benchMessage's default otherwise). */
  tenant?: string;
  /** Epoch ms of the first submit (the benchmark schedules the endpoint's outage against it); default: at once. */
  startAt?: number;
  /**
   * Where the messages go: Redeliver's batcher (default); a BullMQ queue (one `add` a message, as a gateway
   * adds them); a pg-boss queue (one `send` a message; the queue has the retry policy); or `nowhere`: the same
   * batcher whose batches are dropped instead of started, the producer's own ceiling without a queue behind it.
   */
  into?:
    | { bullmq: { port: number; queue: string; jobOptions: JobsOptions } }
    | { pgboss: { connection: PgBossConnection; queue: string } }
    | 'nowhere';
}

/** The answer to a ProduceRun. */
export interface Produced {
  submittedAt: number[];
  acceptedAt: number;
}

/** Hands one message over; resolves once it is accepted. */
interface Target {
  submit(input: DeliveryInput, messageId: string): Promise<unknown>;
  close(): Promise<void>;
}

async function main(): Promise<void> {
  const [address, taskQueue] = process.argv.slice(2);
  if (!address || !taskQueue) throw new Error('usage: producer-process <address> <taskQueue>');
  const client = address === 'none' ? undefined : new Client({ connection: await Connection.connect({ address }) });
  const redeliver = client && new Redeliver(client, { taskQueue });
  answerStats();
  process.on('message', (msg) => {
    if (typeof msg !== 'object' || msg === null) return;
    const run = msg as ProduceRun;
    Promise.resolve()
      .then(() => produce(targetOf(redeliver, run), run))
      .then(
        (submittedAt) => process.send?.({ submittedAt, acceptedAt: Date.now() } satisfies Produced),
        (err: Error) => process.send?.({ error: err.message }),
      );
  });
  process.once('SIGTERM', () => void (client?.connection.close() ?? Promise.resolve()).then(() => process.exit(0)));
  process.send?.('ready');
}

function targetOf(redeliver: Redeliver | undefined, run: ProduceRun): Target {
  if (typeof run.into === 'object' && 'pgboss' in run.into) return pgbossTarget(run.into.pgboss);
  if (typeof run.into === 'object' && 'bullmq' in run.into) return bullmqTarget(run.into.bullmq);
  if (!redeliver) throw new Error('a producer started without a Temporal address feeds pg-boss or BullMQ only');
  if (run.into === undefined) return batcherTarget(redeliver.batcher());
  if (run.into === 'nowhere') {
    // what the batcher does before a start (validation, fingerprints, cutting into batches), and no start
    const startBatch = async (b: { batchId: string }) => ({ batchId: b.batchId, created: true }) as BatchHandle;
    return batcherTarget(new Batcher({ validate: (input) => redeliver.validate(input), startBatch }));
  }
  throw new Error(`unknown target ${JSON.stringify(run.into)}`);
}

function bullmqTarget({ port, queue: name, jobOptions }: { port: number; queue: string; jobOptions: JobsOptions }): Target {
  const queue = new Queue<PostJob>(name, { connection: { host: '127.0.0.1', port } });
  return {
    // benchMessage's target is a URL
    submit: (input, messageId) =>
      queue.add('post', { url: String(input.target), messageId, body: JSON.stringify(input.payload) }, { ...jobOptions, jobId: messageId }),
    close: () => queue.close(),
  };
}

/** Connections of the pg-boss producer's pool: a send is one INSERT and its commit, and 500 a second need more than the default 10. */
const PGBOSS_PRODUCER_POOL = 50;

/**
 * pg-boss (loaded when used: an ES module, which Node 20 `require`s from 20.19 on): one `send` a message, on a pool
 * of its own; a send that fails (a connection not free within pg-boss's 10 s) is sent again after 200 ms, as a
 * gateway would, up to 30 times.
 */
function pgbossTarget({ connection, queue }: { connection: PgBossConnection; queue: string }): Target {
  // what went wrong on the way, told in the benchmark's log when the run ends: a loaded PostgreSQL makes sends wait
  const trouble = { resent: 0, errors: 0 };
  const started = import('pg-boss').then(({ PgBoss }) => {
    const boss = new PgBoss({ ...connection, max: PGBOSS_PRODUCER_POOL });
    // its own maintenance polls fail too when no connection is free in time: counted, not fatal
    boss.on('error', () => trouble.errors++);
    return boss.start();
  });
  return {
    submit: async (input, messageId) => {
      const boss = await started;
      const job: PostJob = { url: String(input.target), messageId, body: JSON.stringify(input.payload) };
      for (let attempt = 1; ; attempt++) {
        try {
          return await boss.send(queue, job);
        } catch (err) {
          if (attempt >= 30) throw err;
          trouble.resent++;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    close: async () => {
      if (trouble.resent + trouble.errors > 0)
        console.log(`    pg-boss producer: ${trouble.resent} sends sent again, ${trouble.errors} errors of its own polls`);
      await (await started).stop({ graceful: true, timeout: 5_000 });
    },
  };
}

const batcherTarget = (batcher: Batcher): Target => ({ submit: (input) => batcher.submit(input), close: () => batcher.close() });

async function produce(target: Target, run: ProduceRun): Promise<number[]> {
  const submittedAt: number[] = new Array(run.messages);
  const accepted: Promise<unknown>[] = [];
  await new Promise((r) => setTimeout(r, Math.max(0, (run.startAt ?? 0) - Date.now())));
  const started = Date.now();
  for (let i = 0; i < run.messages;) {
    // as many as are due by now: a steady rate, whatever the timer's granularity
    const due = run.perSecond > 0 ? Math.min(run.messages, Math.floor(((Date.now() - started) * run.perSecond) / 1000)) : run.messages;
    for (; i < due; i++) {
      submittedAt[i] = Date.now();
      const message = benchMessage(run.sinkUrl, run.path, i, run.tenant);
      const submitted = target.submit(message, message.messageId!);
      // a failure is reported by the Promise.all below, not as an unhandled rejection that ends the process
      submitted.catch(() => undefined);
      accepted.push(submitted);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(accepted);
  await target.close();
  return submittedAt;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
