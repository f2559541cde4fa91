import { Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogMetadata, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities';
import type { AttemptListener } from './activities/deliver';
import { WAITING_TYPE } from './contract';
import { bundleEncryptsFailures, bundleHasTracing } from './bundle';
import { FAILURE_TYPES, UNSENT_TYPE } from './classify/classify';
import { ConfigError, type Environment } from './config/errors';
import { OPERATOR_URLS_ENV, operatorAddressProblems, operatorEventsProblems, type OperatorEvents } from './config/operator-events';
import { deadLetterSinks } from './worker-services/dead-letter-sink';
import { runtimeSettingsFromEnv, workerSettingsFromEnv, type RuntimeSettings, type WorkerSettings } from './config/settings';
import { encryptingDataConverter } from './encryption/data-converter';
import type { KeyRing } from './encryption/keys';
import { RetryBudget, type RetryBudgetOptions } from './endpoints/budget';
import { Breaker } from './worker-services/breaker';
import { ControlCache } from './worker-services/control-cache';
import { EndpointReporter } from './worker-services/endpoint-reporter';
import { EndpointAdmission } from './worker-services/admission';
import { Pacer } from './worker-services/pacer';
import { paceGauges } from './worker-services/pace-metrics';
import { CONTROL_TTL_MS, NO_LIMITS, type EndpointLimits } from './endpoints/controls';
import { producersTimeout } from './endpoints/health';
import { tracingFor, workerTracingOptions, type Tracing } from './telemetry/tracing';
import { AddressGuard } from './transports/address-guard';
import { createHttpAgent } from './transports/http';
import { createMqttPool } from './transports/mqtt';
import { credentialsFromEnvironment, type CredentialResolver } from './transports/mqtt-credentials';
import { signingSecretsFromEnvironment, type SigningSecretResolver } from './transports/signing';
import { partsOf, registerParts } from './worker-services/worker-parts';

// the `redeliver/worker` entry point: what embedding a worker needs, and the types of its options
export { buildWorkflowBundle } from './bundle';
export { runtimeSettingsFromEnv, workerSettingsFromEnv, type RuntimeSettings, type WorkerSettings } from './config/settings';
export { parseKeyRing, type KeyRing } from './encryption/keys';
export { createTracing, type Tracing } from './telemetry/tracing';
export { AddressGuard, BlockedAddressError, rangeOf, type RangeName } from './transports/address-guard';
export type { AttemptListener } from './activities/deliver';
export type { RetryBudgetOptions } from './endpoints/budget';
export type { EndpointLimits } from './endpoints/controls';
export type { OperatorEvents } from './config/operator-events';
export type { CredentialResolver, MqttCredential } from './transports/mqtt-credentials';
export type { SigningSecret, SigningSecretResolver } from './transports/signing';

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
  /** An existing connection, which the caller closes; otherwise one is opened to `address` and closed by runWorker. */
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
  /**
   * Distinct endpoints one tenant's attempts may open endpoint workflows for within 10 minutes (this worker);
   * beyond it their reports reach only workflows already running; `null` for no bound. Default
   * $REDELIVER_MAX_ENDPOINTS_PER_TENANT, else 100 (docs/endpoint-health.md, "Endpoint workflows per tenant").
   */
  maxEndpointsPerTenant?: number | null;
  /**
   * Where MQTT targets' credentials come from, by the name a target gives: a secret store of the
   * application's. Each is still sent only to the brokers it is bound to. Default: the environment
   * (REDELIVER_MQTT_CREDENTIALS_<NAME>, REDELIVER_MQTT_CREDENTIALS_FILE), read at connect time.
   */
  mqttCredentials?: CredentialResolver;
  /**
   * Where HTTP targets' signing secrets come from, by the name a target gives (docs/deliveries.md, "Signed requests"):
   * a secret store of the application's. Each still signs only for the endpoints it is bound to. Default:
   * the environment (REDELIVER_SIGNING_SECRETS_<NAME>, REDELIVER_SIGNING_SECRETS_FILE), read at every request.
   */
  signingSecrets?: SigningSecretResolver;
  /**
   * Every attempt to one endpoint, all workers together: at most `maxInFlight` at once and `rate` a second,
   * for endpoints without limits of their own (`redeliver endpoint set`); `null` for no limits at all, not
   * even an endpoint's own. Default $REDELIVER_ENDPOINT_MAX_IN_FLIGHT and $REDELIVER_ENDPOINT_RATE, else none.
   */
  endpointLimits?: EndpointLimits | null;
  /**
   * Where operational events go (docs/endpoint-health.md): each event a delivery to each URL, signed with the
   * named signing secret, which must be bound to every URL; `null` for nowhere. Default $REDELIVER_OPERATOR_URLS
   * and $REDELIVER_OPERATOR_SIGNING_SECRET, else nowhere.
   */
  operatorEvents?: OperatorEvents | null;
  /**
   * A timeout the producer chose below this (ms) is the producer's failure: attempts it ended are not told to the
   * endpoint's health, downtime, breaker or auto-disable (the delivery still counts them). Default
   * $REDELIVER_ENDPOINT_TIMEOUT_FLOOR, else 1 s; 0: every timeout counts against the endpoint.
   */
  endpointTimeoutFloor?: number;
  /**
   * How long the worker uses what it read of an endpoint's control (limits, pause, disable) before an attempt
   * reads it again: a control applies to every attempt that starts this long after it returned. Default 2 s.
   */
  controlTtlMs?: number;
  /** Hears of every attempt this worker sends (endpoint, outcome, delivery and attempt number), besides endpoint health. */
  attemptListener?: AttemptListener;
  /**
   * While an endpoint fails, a batch's messages wait in an outage hold and go at the recovery pace, for endpoints
   * without an `outage` setting of their own (docs/endpoint-health.md, "Outages: holds and the recovery pace").
   * Default $REDELIVER_OUTAGE_HOLD (`on`/`off`), else on.
   */
  outageHold?: boolean;
  /** The recovery pace's cap on sends in flight to one endpoint from this worker. Default $REDELIVER_RECOVERY_MAX_IN_FLIGHT, else 128. */
  recoveryMaxInFlight?: number;
  /** Settings already read with workerSettingsFromEnv (the CLI reads them once); default: read from `env`. */
  settings?: WorkerSettings;
  /** Where settings not given here come from, and the MQTT credentials by default. Default process.env. */
  env?: Environment;
  /** Passed through to the SDK's Worker.create. */
  workerOptions?: Partial<WorkerOptions>;
}

/** Where the workflow code is: the compiled lib/workflows next to this file (or src/ under ts-jest). */
const WORKFLOWS_PATH = require.resolve('./workflows');

/**
 * Builds a worker that runs the delivery workflows and their attempts, configured by the options and, for
 * what they leave out, the environment (docs/deploying.md): a bad variable is refused with a ConfigError
 * that names it, before anything connects. Run it with runWorker, which closes what this opened.
 */
export async function createWorker(options: RedeliverWorkerOptions = {}): Promise<Worker> {
  const env = options.env ?? process.env;
  const settings = options.settings ?? workerSettingsFromEnv(env);
  const bundlePath = options.workflowBundlePath ?? settings.workflowBundlePath;
  const keys = options.encryptionKeys === undefined ? settings.encryptionKeys : (options.encryptionKeys ?? undefined);
  const signing = options.signingSecrets ?? signingSecretsFromEnvironment(env);
  const operatorEvents = operatorEventsOf(options.operatorEvents, settings, signing);
  if (keys && bundlePath) await checkBundleEncrypts(bundlePath);
  const tracing = await tracingOf(options, settings, bundlePath);
  const guard = guardOf(options.allowAddresses, settings);
  const maxEndpointsPerTenant = maxEndpointsPerTenantOf(options.maxEndpointsPerTenant, settings);
  const controlTtl = controlTtlOf(options.controlTtlMs);
  await checkOperatorAddresses(operatorEvents, guard, options.operatorEvents === undefined ? OPERATOR_URLS_ENV : undefined);
  const http = createHttpAgent({ allow: guard });
  // MQTT brokers go through the same SSRF guard; credentials come from the environment checked above (docs/mqtt.md, "Credentials")
  const mqtt = createMqttPool({ allow: guard, credentials: options.mqttCredentials ?? credentialsFromEnvironment(env) });
  const connection =
    options.connection ??
    (await NativeConnection.connect({ ...settings.temporal.connectionOptions, ...(options.address && { address: options.address }) }));
  const namespace = options.namespace ?? settings.temporal.namespace;
  const taskQueue = options.taskQueue ?? settings.taskQueue;
  const dataConverter = keys && encryptingDataConverter(keys);
  // the worker's own client: endpoint reports, a paused delivery's look at its retrying activity, the submission check
  const client = new Client({ connection, namespace, ...(dataConverter && { dataConverter }) });
  const budgetOptions = options.retryBudget === undefined ? settings.retryBudget : options.retryBudget;
  const budget = budgetOptions && new RetryBudget(budgetOptions);
  const reporter =
    (options.endpointHealth ?? settings.endpointHealth)
      ? new EndpointReporter(client, taskQueue, {
          budget: budgetOptions || 'off',
          maxEndpointsPerTenant,
          log: (message) => Runtime.instance().logger.info(message),
        })
      : null;
  const limits = options.endpointLimits === undefined ? settings.endpointLimits : options.endpointLimits;
  const controls = limits && new ControlCache(client, taskQueue, controlTtl);
  // the breaker hears of every attempt as the reporter does: it sees a failing endpoint before its workflow does
  const breaker = controls && new Breaker(reporter?.identity ?? 'this worker');
  const admission = controls && admissionOf(limits!, controls, breaker!, reporter);
  const pacer = pacerOf(options, settings, limits, controls, reporter);
  reporter?.showPaceOf(pacer);
  const floorMs = options.endpointTimeoutFloor ?? settings.endpointTimeoutFloorMs;
  // the pacer hears what the endpoint's health hears (as the breaker does): an outage as every attempt sees it
  const listener = allListeners([endpointsListener(allListeners([reporter, breaker, pacer]), floorMs), options.attemptListener]);
  const traced = tracing && workerTracingOptions(tracing, { bundling: !bundlePath });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    // the reporter counts workers by their poller identity: one per worker, also within one process
    ...(reporter && { identity: reporter.identity }),
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({
      http,
      mqtt,
      budget,
      reporter,
      client,
      signing,
      admission,
      operatorEvents,
      pacer,
      outageHold: options.outageHold ?? settings.outageHold,
      ...(controls && { control: async (endpoint: string) => controls.get(endpoint) }),
      ...(listener && { listener }),
    }),
    maxConcurrentActivityTaskExecutions: options.maxConcurrentAttempts ?? settings.maxConcurrentAttempts,
    ...(settings.maxConcurrentWorkflowTasks && { maxConcurrentWorkflowTaskExecutions: settings.maxConcurrentWorkflowTasks }),
    // SIGTERM: stop polling, let attempts in flight finish for this long, then hand the rest back (docs/deploying.md, "Graceful shutdown")
    shutdownGraceTime: options.shutdownGraceTime ?? settings.shutdownGraceMs,
    ...(dataConverter && { dataConverter }),
    ...traced,
    ...options.workerOptions,
    // a delivery that ended a dead letter tells the worker, which counts it and reports it to its endpoint (operational events)
    sinks: { ...traced?.sinks, ...deadLetterSinks(reporter), ...options.workerOptions?.sinks },
  });
  await reporter?.start();
  const close = async () => {
    await reporter?.stop();
    if (!options.connection) await connection.close();
    await http.close();
    await mqtt.close();
    await tracing?.shutdown();
  };
  registerParts(worker, { mqtt, reporter, controls, admission, pacer, close });
  return worker;
}

/** Tracing as the options or the environment ask; refused when the environment asks for it and the bundle has no tracing in it. */
async function tracingOf(options: RedeliverWorkerOptions, settings: WorkerSettings, bundlePath?: string): Promise<Tracing | undefined> {
  if (options.tracing !== undefined) return options.tracing ?? undefined;
  const tracing = await tracingFor(settings.tracesExporter, settings.serviceName);
  if (tracing && bundlePath && !(await bundleHasTracing(bundlePath))) {
    await tracing.shutdown();
    throw new ConfigError([
      {
        variable: 'REDELIVER_WORKFLOW_BUNDLE',
        message:
          `${bundlePath} has no tracing interceptors, and OTEL_TRACES_EXPORTER asks for traces: point it at a bundle built with ` +
          '`redeliver bundle --tracing` (the image has /app/lib/workflow-bundle-tracing.js)',
      },
    ]);
  }
  return tracing;
}

/** A pre-built bundle keeps its own failure converter: with keys, it must be the encrypting one, or failure messages go out in plain text. */
async function checkBundleEncrypts(bundlePath: string): Promise<void> {
  if (await bundleEncryptsFailures(bundlePath)) return;
  throw new ConfigError([
    {
      variable: 'REDELIVER_WORKFLOW_BUNDLE',
      message:
        `${bundlePath} has no encrypting failure converter, and REDELIVER_ENCRYPTION_KEYS is set: workflow failure messages would be ` +
        'stored in plain text. Point it at a bundle built with `redeliver bundle --encryption` (the image has /app/lib/workflow-bundle-encrypted.js)',
    },
  ]);
}

/** The option's operator URLs (checked against the worker's signing secrets), else the environment's (checked when read). */
function operatorEventsOf(
  option: OperatorEvents | null | undefined,
  settings: WorkerSettings,
  signing: SigningSecretResolver,
): OperatorEvents | null {
  if (option === undefined) return settings.operatorEvents;
  const problems = option ? operatorEventsProblems(option, signing) : [];
  if (problems.length) throw new ConfigError(problems);
  return option;
}

function maxEndpointsPerTenantOf(option: number | null | undefined, settings: WorkerSettings): number | null {
  if (option === undefined) return settings.maxEndpointsPerTenant;
  if (option === null || (Number.isInteger(option) && option > 0)) return option;
  throw new ConfigError([
    { variable: 'maxEndpointsPerTenant', message: `must be a whole number above 0 or null, got ${JSON.stringify(option)}` },
  ]);
}

function controlTtlOf(option: number | undefined): number {
  if (option === undefined) return CONTROL_TTL_MS;
  if (Number.isFinite(option) && option >= 0) return option;
  throw new ConfigError([{ variable: 'controlTtlMs', message: `must be a number of ms from 0, got ${JSON.stringify(option)}` }]);
}

/** Operator URLs the SSRF guard refuses stop the worker before it connects, naming where they came from. */
async function checkOperatorAddresses(events: OperatorEvents | null, guard: AddressGuard, field?: string): Promise<void> {
  const problems = events ? await operatorAddressProblems(events, guard, field) : [];
  if (problems.length) throw new ConfigError(problems);
}

function guardOf(allow: RedeliverWorkerOptions['allowAddresses'], settings: WorkerSettings): AddressGuard {
  if (allow === undefined) return settings.allowAddresses;
  return allow instanceof AddressGuard ? allow : AddressGuard.parse(allow, 'allowAddresses');
}

/** The worker's per-endpoint limits: each endpoint's own (its workflow's control) over the defaults; this worker's share as the reporter counts it. */
function admissionOf(
  defaults: EndpointLimits,
  controls: ControlCache,
  breaker: Breaker,
  reporter: EndpointReporter | null,
): EndpointAdmission {
  return new EndpointAdmission({
    defaults,
    breaker,
    control: (endpoint) => controls.get(endpoint),
    ...(reporter && { share: (endpoint: string) => reporter.share(endpoint) }),
  });
}

/** The worker's recovery pacer: each endpoint's cap is its share of the endpoint's max-in-flight (as the limits apply it) within the worker's. */
function pacerOf(
  options: RedeliverWorkerOptions,
  settings: WorkerSettings,
  limits: EndpointLimits | null,
  controls: ControlCache | null,
  reporter: EndpointReporter | null,
): Pacer {
  const maxInFlight = options.recoveryMaxInFlight ?? settings.recoveryMaxInFlight;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1)
    throw new ConfigError([
      { variable: 'recoveryMaxInFlight', message: `must be a whole number above 0, got ${JSON.stringify(maxInFlight)}` },
    ]);
  return new Pacer(reporter?.identity ?? 'this worker', Date.now, {
    maxInFlight,
    defaults: limits ?? NO_LIMITS,
    changed: paceGauges(),
    ...(controls && { control: async (endpoint: string) => controls.get(endpoint) }),
    ...(reporter && { share: (endpoint: string) => reporter.share(endpoint) }),
  });
}

/**
 * What the endpoint hears of (its health, downtime and breaker): every attempt but those that timed out under a
 * timeout their producer chose below the floor, which a producer could otherwise use to fail a shared endpoint
 * for every tenant (a flood of 1 ms timeouts; docs/threat-model.md).
 */
function endpointsListener(listener: AttemptListener | undefined, floorMs: number): AttemptListener | undefined {
  if (!listener || floorMs <= 0) return listener;
  return {
    attempted(endpoint, outcome, attempt) {
      if (!producersTimeout(outcome, attempt.timeoutMs, floorMs)) listener.attempted(endpoint, outcome, attempt);
    },
  };
}

/** The reporter hears of every attempt (endpoint health), the breaker too; an application's listener as well, when it gives one. */
function allListeners(listeners: (AttemptListener | null | undefined)[]): AttemptListener | undefined {
  const all = listeners.filter((l): l is AttemptListener => !!l);
  if (all.length <= 1) return all[0];
  return {
    attempted(endpoint, outcome, attempt) {
      for (const l of all) l.attempted(endpoint, outcome, attempt);
    },
  };
}

/**
 * Runs a worker made by createWorker until it stops (shutdown(), SIGINT, SIGTERM), or with `until` until
 * that settles (the SDK's runUntil), then closes what createWorker opened.
 */
export function runWorker(worker: Worker): Promise<void>;
export function runWorker<R>(worker: Worker, until: Promise<R>): Promise<R>;
export async function runWorker<R>(worker: Worker, until?: Promise<R>): Promise<R | void> {
  try {
    return until ? await worker.runUntil(until) : await worker.run();
  } finally {
    await partsOf(worker)?.close();
  }
}

const EXPECTED_FAILURES = new Set([...Object.values(FAILURE_TYPES), WAITING_TYPE, UNSENT_TYPE]);

/**
 * Installs the SDK runtime with a logger at the log level (default $REDELIVER_LOG_LEVEL, else WARN) that
 * leaves out failed attempts: they are the normal work of a retry system, recorded in each delivery's
 * history; and, with a Prometheus address ($REDELIVER_PROMETHEUS_ADDRESS), the SDK's metrics endpoint there.
 * Call once, before the first worker is created.
 */
export function installRuntime(settings: RuntimeSettings = runtimeSettingsFromEnv()): void {
  const { logLevel: level, prometheusAddress: prometheus } = settings;
  const base = new DefaultLogger(level);
  const logger = new DefaultLogger(level, (entry) => {
    const error = (entry.meta as LogMetadata | undefined)?.error as { type?: string } | undefined;
    if (entry.message === 'Activity failed' && error?.type && EXPECTED_FAILURES.has(error.type)) return;
    base.log(entry.level, entry.message, entry.meta);
  });
  // the SDK's own metrics (task slots, poll latencies, activity outcomes), on /metrics for Prometheus to scrape
  Runtime.install({ logger, ...(prometheus && { telemetryOptions: { metrics: { prometheus: { bindAddress: prometheus } } } }) });
}
