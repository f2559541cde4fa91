import { Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogMetadata, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import { WAITING_TYPE } from './activities/retry';
import { bundleHasTracing } from './bundle';
import { FAILURE_TYPES } from './classify/classify';
import { ConfigError, EnvReader, type Environment } from './config/errors';
import { LOG_LEVELS, workerSettingsFromEnv } from './config/settings';
import { encryptingDataConverter } from './encryption/data-converter';
import type { KeyRing } from './encryption/keys';
import { RetryBudget, type RetryBudgetOptions } from './endpoints/budget';
import { EndpointReporter } from './endpoints/reporter';
import { tracingFor, workerTracingOptions, type Tracing } from './telemetry/tracing';
import { AddressGuard } from './transports/address-guard';
import { createHttpAgent } from './transports/http';
import { createMqttPool } from './transports/mqtt';
import { credentialsFromEnvironment } from './transports/mqtt-credentials';

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
  /**
   * The SSRF guard's allow-list: blocked ranges or CIDRs attempts may reach anyway (`['loopback']` for
   * local endpoints). Default $REDELIVER_ALLOW_ADDRESSES, else none: public addresses only.
   */
  allowAddresses?: AddressGuard | string | readonly string[];
  /** Payload encryption keys; `null` for none. Default $REDELIVER_ENCRYPTION_KEYS(_FILE), else none. */
  encryptionKeys?: KeyRing | null;
  /** How long attempts in flight may finish after shutdown starts, before they are handed back. Default $REDELIVER_SHUTDOWN_GRACE or 20 s. */
  shutdownGraceTime?: Duration;
  /** OpenTelemetry tracing; `null` for none. Default from $OTEL_TRACES_EXPORTER (none). */
  tracing?: Tracing | null;
  /**
   * Retries per second (and burst) to one endpoint, for all workers together; `null` for no bound.
   * Default $REDELIVER_RETRY_BUDGET (and _BURST), else 10/s with a burst of 20 (docs/endpoint-health.md).
   */
  retryBudget?: RetryBudgetOptions | null;
  /** Report attempts to each endpoint's workflow: health, downtime, and the budget's share per worker. Default $REDELIVER_ENDPOINT_HEALTH, else true. */
  endpointHealth?: boolean;
  /** Where settings not given here come from. Default process.env. */
  env?: Environment;
  /** Passed through to the SDK's Worker.create. */
  workerOptions?: Partial<WorkerOptions>;
}

/** Where the workflow code is: the compiled lib/workflows next to this file (or src/ under ts-jest). */
export const WORKFLOWS_PATH = require.resolve('./workflows');

/** What createWorker opened for a worker, closed by runWorker once the worker has stopped. */
const OWNED = new WeakMap<Worker, () => Promise<void>>();

/**
 * Builds a worker that runs the delivery workflows and their attempts, configured by the options and, for
 * what they leave out, the environment (docs/deploying.md): a bad variable is refused with a ConfigError
 * that names it, before anything connects.
 */
export async function createWorker(options: RedeliverWorkerOptions = {}): Promise<Worker> {
  const settings = workerSettingsFromEnv(options.env ?? process.env);
  const workflowBundlePath = options.workflowBundlePath ?? settings.workflowBundlePath;
  const tracing = options.tracing === undefined ? await tracingFor(settings.tracesExporter, settings.serviceName) : (options.tracing ?? undefined);
  if (options.tracing === undefined && tracing && workflowBundlePath && !(await bundleHasTracing(workflowBundlePath))) {
    await tracing.shutdown();
    throw new ConfigError([
      { variable: 'REDELIVER_WORKFLOW_BUNDLE', message: `${workflowBundlePath} has no tracing interceptors, and OTEL_TRACES_EXPORTER asks for traces: point it at a bundle built with \`redeliver bundle --tracing\` (the image has /app/lib/workflow-bundle-tracing.js)` },
    ]);
  }
  const keys = options.encryptionKeys === undefined ? settings.encryptionKeys : (options.encryptionKeys ?? undefined);
  const guard = options.allowAddresses === undefined ? settings.allowAddresses : options.allowAddresses instanceof AddressGuard ? options.allowAddresses : AddressGuard.parse(options.allowAddresses, 'allowAddresses');
  const http = createHttpAgent({ allow: guard });
  // MQTT brokers go through the same SSRF guard; credentials come from the environment checked above (README, "MQTT credentials")
  const mqtt = createMqttPool({ allow: guard, credentials: credentialsFromEnvironment(options.env ?? process.env) });
  const connection =
    options.connection ?? (await NativeConnection.connect({ ...settings.temporal.connectionOptions, ...(options.address && { address: options.address }) }));
  const tracingOptions = tracing ? workerTracingOptions(tracing, { bundling: !workflowBundlePath }) : undefined;
  const namespace = options.namespace ?? settings.temporal.namespace;
  const taskQueue = options.taskQueue ?? settings.taskQueue;
  // the worker's own client: endpoint reports, and a paused delivery's look at its retrying activity
  const client = new Client({ connection, namespace, ...(keys && { dataConverter: encryptingDataConverter(keys) }) });
  const budgetOptions = options.retryBudget === undefined ? settings.retryBudget : options.retryBudget;
  const budget = budgetOptions ? new RetryBudget(budgetOptions) : null;
  const reporter = (options.endpointHealth ?? settings.endpointHealth) ? new EndpointReporter(client, taskQueue) : null;
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    // the reporter counts workers by their poller identity: one per worker, also within one process
    ...(reporter && { identity: reporter.identity }),
    ...(workflowBundlePath ? { workflowBundle: { codePath: workflowBundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({ http, mqtt, budget, reporter, client }),
    maxConcurrentActivityTaskExecutions: options.maxConcurrentAttempts ?? settings.maxConcurrentAttempts,
    ...(settings.maxConcurrentWorkflowTasks && { maxConcurrentWorkflowTaskExecutions: settings.maxConcurrentWorkflowTasks }),
    // SIGTERM: stop polling, let attempts in flight finish for this long, then hand the rest back (activities/deliver.ts)
    shutdownGraceTime: options.shutdownGraceTime ?? settings.shutdownGraceMs,
    ...(keys && { dataConverter: encryptingDataConverter(keys) }),
    ...tracingOptions,
    ...options.workerOptions,
  });
  await reporter?.start();
  OWNED.set(worker, async () => {
    await reporter?.stop();
    if (!options.connection) await connection.close();
    await http.close();
    await mqtt.close();
    await tracing?.shutdown();
  });
  return worker;
}

/** Runs a worker made by createWorker until it stops (shutdown(), SIGINT, SIGTERM), then closes what createWorker opened. */
export async function runWorker(worker: Worker): Promise<void> {
  try {
    await worker.run();
  } finally {
    await OWNED.get(worker)?.();
  }
}

const EXPECTED_FAILURES = new Set([...Object.values(FAILURE_TYPES), WAITING_TYPE]);

/**
 * Installs the SDK runtime with a logger at $REDELIVER_LOG_LEVEL (default WARN) that leaves out failed
 * attempts: they are the normal work of a retry system, recorded in each delivery's history; and, when
 * $REDELIVER_PROMETHEUS_ADDRESS is set, the SDK's Prometheus endpoint there.
 * Call once, before the first worker is created.
 */
export function installRuntime(env: Environment = process.env): void {
  const reader = new EnvReader(env);
  const level = reader.oneOf('REDELIVER_LOG_LEVEL', LOG_LEVELS, 'WARN');
  const prometheus = reader.hostPort('REDELIVER_PROMETHEUS_ADDRESS', '0.0.0.0:9464');
  reader.done();
  const base = new DefaultLogger(level);
  const logger = new DefaultLogger(level, (entry) => {
    const error = (entry.meta as LogMetadata | undefined)?.error as { type?: string } | undefined;
    if (entry.message === 'Activity failed' && error?.type && EXPECTED_FAILURES.has(error.type)) return;
    base.log(entry.level, entry.message, entry.meta);
  });
  // the SDK's own metrics (task slots, poll latencies, activity outcomes), on /metrics for Prometheus to scrape
  Runtime.install({ logger, ...(prometheus && { telemetryOptions: { metrics: { prometheus: { bindAddress: prometheus } } } }) });
}
