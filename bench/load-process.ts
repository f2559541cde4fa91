/**
 * The load generator alone, in a process of its own: `node load-process.js <origin> <connections>`.
 * On a `{ path, messages }` message it POSTs that many messages to the origin with a plain undici Pool,
 * one request in flight per connection, and answers `{ seconds }` (first request until the last answer)
 * or `{ error }` if any answer was not a 2xx. With `batches`, each request is a JSON array of that many
 * delivery inputs (bench/api.ts: the HTTP API's submit). Answers 'stats' like the workers (process-stats.ts).
 */
import { Pool } from 'undici';
import { pool } from './harness';
import { answerStats } from './process-stats';
import { benchMessage } from './volume-message';

export interface LoadRun {
  path: string;
  messages: number;
  /** POST the messages as arrays of delivery inputs (benchMessage) to the sink's `path`, `size` a request. */
  batches?: { size: number; sinkUrl: string; sinkPath: string; authorization: string };
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
  const requests = run.batches ? batchRequests(run, run.batches) : singleRequests(run);
  const started = performance.now();
  await pool(requests, concurrency, async ({ headers, body }, i) => {
    const res = await client.request({ path: run.path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode} for request ${i}`);
  });
  return (performance.now() - started) / 1000;
}

type Request = { headers: Record<string, string>; body: string };

function singleRequests(run: LoadRun): Request[] {
  return Array.from({ length: run.messages }, (_, i) => ({ headers: { 'message-id': `m${i}` }, body: JSON.stringify({ id: `m${i}` }) }));
}

/** Made before the clock starts: the generator's cost is sending them, as a producer's would be. */
function batchRequests(run: LoadRun, batches: NonNullable<LoadRun['batches']>): Request[] {
  const requests: Request[] = [];
  for (let first = 0; first < run.messages; first += batches.size) {
    const count = Math.min(batches.size, run.messages - first);
    const inputs = Array.from({ length: count }, (_, k) => benchMessage(batches.sinkUrl, batches.sinkPath, first + k));
    requests.push({ headers: { authorization: batches.authorization }, body: JSON.stringify(inputs) });
  }
  return requests;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
