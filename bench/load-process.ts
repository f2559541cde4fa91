/**
 * The load generator alone, in a process of its own: `node load-process.js <origin> <connections>`.
 * On a `{ path, messages }` message it POSTs that many messages to the origin with a plain undici Pool,
 * one request in flight per connection, and answers `{ seconds }` (first request until the last answer)
 * or `{ error }` if any answer was not a 2xx. Answers 'stats' like the workers (process-stats.ts).
 */
import { Pool } from 'undici';
import { pool } from './harness';
import { answerStats } from './process-stats';

export interface LoadRun {
  path: string;
  messages: number;
}

async function main(): Promise<void> {
  const [origin, connections] = process.argv.slice(2);
  if (!origin || !connections) throw new Error('usage: load-process <origin> <connections>');
  const client = new Pool(origin, { connections: Number(connections), keepAliveTimeout: 10_000 });
  answerStats();
  process.on('message', (msg) => {
    if (typeof msg !== 'object' || msg === null) return;
    load(client, Number(connections), msg as LoadRun).then(
      (seconds) => process.send?.({ seconds }),
      (err: Error) => process.send?.({ error: err.message }),
    );
  });
  process.once('SIGTERM', () => void client.close().then(() => process.exit(0)));
  process.send?.('ready');
}

async function load(client: Pool, concurrency: number, run: LoadRun): Promise<number> {
  const ids = Array.from({ length: run.messages }, (_, i) => `m${i}`);
  const started = performance.now();
  await pool(ids, concurrency, async (messageId) => {
    const res = await client.request({
      path: run.path,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'message-id': messageId },
      body: JSON.stringify({ id: messageId }),
    });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode} for ${messageId}`);
  });
  return (performance.now() - started) / 1000;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
