/**
 * A producer in a process of its own, for the latency benchmark (redeliver-volume.ts): `node
 * producer-process.js <address> <taskQueue>`. On a `{ sinkUrl, path, perSecond, messages }` message it hands
 * that many messages, one at a time at a steady rate, to a Redeliver batcher, and answers `{ submittedAt }`
 * (epoch ms of each `submit` call, by message index) once every batch is accepted, or `{ error }`. Its own
 * process, so that its work does not delay the sink's clock in the benchmark's process.
 */
import { Client, Connection } from '@temporalio/client';
import { Redeliver } from '../src/client/index';
import { benchMessage } from './volume-message';
import { answerStats } from './process-stats';

export interface ProduceRun {
  sinkUrl: string;
  path: string;
  perSecond: number;
  messages: number;
}

async function main(): Promise<void> {
  const [address, taskQueue] = process.argv.slice(2);
  if (!address || !taskQueue) throw new Error('usage: producer-process <address> <taskQueue>');
  const client = new Client({ connection: await Connection.connect({ address }) });
  const redeliver = new Redeliver(client, { taskQueue });
  answerStats();
  process.on('message', (msg) => {
    if (typeof msg !== 'object' || msg === null) return;
    produce(redeliver, msg as ProduceRun).then(
      (submittedAt) => process.send?.({ submittedAt }),
      (err: Error) => process.send?.({ error: err.message }),
    );
  });
  process.once('SIGTERM', () => void client.connection.close().then(() => process.exit(0)));
  process.send?.('ready');
}

async function produce(redeliver: Redeliver, run: ProduceRun): Promise<number[]> {
  const batcher = redeliver.batcher();
  const submittedAt: number[] = new Array(run.messages);
  const accepted: Promise<unknown>[] = [];
  const started = Date.now();
  for (let i = 0; i < run.messages;) {
    // as many as are due by now: a steady rate, whatever the timer's granularity
    const due = Math.min(run.messages, Math.floor(((Date.now() - started) * run.perSecond) / 1000));
    for (; i < due; i++) {
      submittedAt[i] = Date.now();
      accepted.push(batcher.submit(benchMessage(run.sinkUrl, run.path, i)));
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(accepted);
  await batcher.close();
  return submittedAt;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
