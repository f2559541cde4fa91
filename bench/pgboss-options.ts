/** What the peers benchmark's pg-boss processes share (bench/pgboss.ts, pgboss-worker-process.ts, producer-process.ts). */

/** Where pg-boss connects: a database of its own on the benchmark's PostgreSQL. */
export interface PgBossConnection {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/**
 * The worker's `work()` options: batches of 10 on 5 local workers, up to 50 jobs in flight (BullMQ's concurrency
 * 50); while a fetch comes back full the worker fetches again at once, else it polls every 0.5 s (pg-boss's
 * shortest). No LISTEN/NOTIFY: a retry comes due without a NOTIFY (with it on, the default backstop poll of 30 s
 * held retries that long), and a NOTIFY in every send's commit serializes the commits, which at 500 sends a second
 * under an outage's retries left the producer without a connection for minutes. Each job of a batch is settled on
 * its own.
 */
export const PGBOSS_WORK_OPTIONS = {
  batchSize: 10,
  localConcurrency: 5,
  perJobResults: true,
  burstWhenBatchFull: true,
  pollingIntervalSeconds: 0.5,
} as const;

/**
 * The queue's retry policy, as BullMQ's jobs have it (bench/bullmq.ts: 10 attempts, exponential backoff): 9
 * retries, exponential from pg-boss's smallest delay, 1 s (it takes whole seconds), with its own jitter (a retry
 * waits between 2^n ÷ 2 and 2^n seconds), no cap.
 */
export const PGBOSS_QUEUE_OPTIONS = { retryLimit: 9, retryDelay: 1, retryBackoff: true } as const;
