import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel, type LogMetadata, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { FAILURE_TYPES } from './classify/classify';
import { DEFAULT_TASK_QUEUE } from './client';
import { createHttpAgent } from './transports/http';

export interface RedeliverWorkerOptions {
  /** host:port of the Temporal frontend. Default $TEMPORAL_ADDRESS or localhost:7233. */
  address?: string;
  /** Default $TEMPORAL_NAMESPACE or `default`. */
  namespace?: string;
  /** Default $REDELIVER_TASK_QUEUE or `redeliver`. */
  taskQueue?: string;
  /** Attempts in flight at once. Default $REDELIVER_MAX_CONCURRENT_ATTEMPTS or 200. */
  maxConcurrentAttempts?: number;
  /** A pre-built workflow bundle (production); the worker bundles src/workflows itself when absent. */
  workflowBundlePath?: string;
  /** An existing connection (tests); otherwise one is opened to `address`. */
  connection?: NativeConnection;
  /** Passed through to the SDK's Worker.create. */
  workerOptions?: Partial<WorkerOptions>;
}

/** Where the workflow code is: the compiled lib/workflows next to this file (or src/ under ts-jest). */
export const WORKFLOWS_PATH = require.resolve('./workflows');

/** Builds a worker that runs the delivery workflows and their attempts. */
export async function createWorker(options: RedeliverWorkerOptions = {}): Promise<Worker> {
  const connection =
    options.connection ??
    (await NativeConnection.connect({ address: options.address ?? process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }));
  const maxConcurrentAttempts = options.maxConcurrentAttempts ?? numberFromEnv('REDELIVER_MAX_CONCURRENT_ATTEMPTS', 200);
  return Worker.create({
    connection,
    namespace: options.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: options.taskQueue ?? process.env.REDELIVER_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    ...(options.workflowBundlePath
      ? { workflowBundle: { codePath: options.workflowBundlePath } }
      : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({ http: createHttpAgent() }),
    maxConcurrentActivityTaskExecutions: maxConcurrentAttempts,
    ...options.workerOptions,
  });
}

function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a whole number above 0, got ${JSON.stringify(raw)}`);
  return n;
}

const EXPECTED_FAILURES = new Set(Object.values(FAILURE_TYPES));
const LEVELS: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/**
 * Installs the SDK runtime with a logger at $REDELIVER_LOG_LEVEL (default WARN) that leaves out failed
 * attempts: they are the normal work of a retry system, recorded in each delivery's history.
 * Call once, before the first worker is created.
 */
export function installRuntime(): void {
  const level = (process.env.REDELIVER_LOG_LEVEL ?? 'WARN').toUpperCase() as LogLevel;
  if (!LEVELS.includes(level)) throw new Error(`REDELIVER_LOG_LEVEL must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  const base = new DefaultLogger(level);
  const logger = new DefaultLogger(level, (entry) => {
    const error = (entry.meta as LogMetadata | undefined)?.error as { type?: string } | undefined;
    if (entry.message === 'Activity failed' && error?.type && EXPECTED_FAILURES.has(error.type)) return;
    base.log(entry.level, entry.message, entry.meta);
  });
  Runtime.install({ logger });
}
