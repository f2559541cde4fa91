import { existsSync } from 'node:fs';
import type { LogLevel } from '@temporalio/worker';
import { readKeyRing, type KeyRing } from '../encryption/keys';
import { DEFAULT_RETRY_BUDGET, type RetryBudgetOptions } from '../endpoints/budget';
import { checkSettingsChange, limitsOf, NO_LIMITS, type EndpointLimits, type EndpointSettings } from '../endpoints/controls';
import { DEFAULT_TIMEOUT_FLOOR_MS } from '../endpoints/health';
import { parseDuration } from '../policy/duration';
import { TRACES_EXPORTERS, type TracesExporter } from '../telemetry/tracing';
import { DEFAULT_RECOVERY_MAX_IN_FLIGHT } from '../worker-services/pacer';
import { AddressGuard } from '../transports/address-guard';
import { credentialProblems } from '../transports/mqtt-credentials';
import { signingSecretProblems, signingSecretsFromEnvironment } from '../transports/signing';
import { EnvReader, type Environment } from './errors';
import { readOperatorEvents, type OperatorEvents } from './operator-events';
import { readTemporalConnection, type TemporalConnectionConfig } from './temporal';

import { DEFAULT_TASK_QUEUE } from '../delivery/ids';

export { DEFAULT_TASK_QUEUE };
export const DEFAULT_MAX_CONCURRENT_ATTEMPTS = 200;
/** Distinct endpoints one tenant's attempts may open endpoint workflows for within 10 minutes, per worker. */
export const DEFAULT_MAX_ENDPOINTS_PER_TENANT = 100;
export const DEFAULT_SHUTDOWN_GRACE_MS = 20_000;
/** A floor above the longest timeout a delivery may have (5 min) would exempt every timeout. */
const MAX_TIMEOUT_FLOOR_MS = 300_000;
export const LOG_LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/** What a Redeliver made on an application's own Client takes from the environment: no connection settings. */
export interface ClientDefaults {
  taskQueue: string;
  /** Keys are configured: a Client without a payload codec would store message bodies in plain text. */
  encryptionConfigured: boolean;
}

/** What a client (Redeliver.connect, the CLI) takes from the environment. */
export interface ClientSettings {
  temporal: TemporalConnectionConfig;
  taskQueue: string;
  /** Payload encryption; none when no key is configured. */
  encryptionKeys?: KeyRing;
  /** Trace the client's calls with the tracer provider the application registered: OTEL_TRACES_EXPORTER is set, and not `none`. */
  tracing: boolean;
  /** How a single submit makes its first attempt (docs/batches.md, "A single submit"). */
  singleSubmit: 'standalone' | 'workflow';
}

/** What the SDK runtime of a worker's process takes from the environment (installRuntime). */
export interface RuntimeSettings {
  logLevel: LogLevel;
  prometheusAddress?: string;
}

/** What a worker takes from the environment (docs/deploying.md lists the variables). */
export interface WorkerSettings extends ClientSettings, RuntimeSettings {
  maxConcurrentAttempts: number;
  maxConcurrentWorkflowTasks?: number;
  shutdownGraceMs: number;
  allowAddresses: AddressGuard;
  workflowBundlePath?: string;
  healthAddress?: string;
  tracesExporter: TracesExporter;
  serviceName: string;
  /** Retries per second and burst per endpoint, all workers together; null: not bounded. */
  retryBudget: RetryBudgetOptions | null;
  /** Every attempt to one endpoint, all workers together, for endpoints without limits of their own (docs/endpoint-health.md). */
  endpointLimits: EndpointLimits;
  /** Report attempts to each endpoint's workflow (health, downtime, the budget's share per worker). */
  endpointHealth: boolean;
  /** Timeouts a producer chose below this (ms) do not count against the endpoint (producersTimeout); 0: all do. */
  endpointTimeoutFloorMs: number;
  /** Distinct endpoints one tenant's attempts may open endpoint workflows for within 10 min, per worker; null: no bound. */
  maxEndpointsPerTenant: number | null;
  /** Where operational events go, signed (docs/endpoint-health.md); null: nowhere. */
  operatorEvents: OperatorEvents | null;
  /** A batch's messages wait in an outage hold while their endpoint fails, for endpoints without an `outage` setting of their own. */
  outageHold: boolean;
  /** The recovery pace's cap on sends in flight to one endpoint from this worker (docs/endpoint-health.md, "Outages: holds and the recovery pace"). */
  recoveryMaxInFlight: number;
}

/** The defaults of a Redeliver on a Client the application made; never throws (the Client is configured already). */
export function clientDefaultsFromEnv(env: Environment = process.env): ClientDefaults {
  const reader = new EnvReader(env);
  const encryptionConfigured = !!(reader.string('REDELIVER_ENCRYPTION_KEYS') ?? reader.string('REDELIVER_ENCRYPTION_KEYS_FILE'));
  return { taskQueue: reader.string('REDELIVER_TASK_QUEUE') ?? DEFAULT_TASK_QUEUE, encryptionConfigured };
}

/** The client's settings; throws a ConfigError naming every bad variable. */
export function clientSettingsFromEnv(env: Environment = process.env): ClientSettings {
  const reader = new EnvReader(env);
  const settings = readClientSettings(reader);
  reader.done();
  return settings;
}

/** The SDK runtime's settings; throws a ConfigError naming every bad variable. */
export function runtimeSettingsFromEnv(env: Environment = process.env): RuntimeSettings {
  const reader = new EnvReader(env);
  const settings = readRuntimeSettings(reader);
  reader.done();
  return settings;
}

/** The worker's settings; throws a ConfigError naming every bad variable, all at once. */
export function workerSettingsFromEnv(env: Environment = process.env): WorkerSettings {
  const reader = new EnvReader(env);
  const client = readClientSettings(reader);
  const graceMs = readShutdownGrace(reader);

  let allowAddresses = AddressGuard.DEFAULT;
  try {
    allowAddresses = AddressGuard.parse(reader.string('REDELIVER_ALLOW_ADDRESSES'), 'REDELIVER_ALLOW_ADDRESSES');
  } catch (err) {
    reader.problem('REDELIVER_ALLOW_ADDRESSES', (err as Error).message.replace(/^REDELIVER_ALLOW_ADDRESSES: /, ''));
  }

  // every configured MQTT credential, now: one bound to no broker would otherwise fail only at its first delivery
  for (const p of credentialProblems(reader.env)) reader.problem(p.variable, p.message);
  for (const p of signingSecretProblems(reader.env)) reader.problem(p.variable, p.message);

  const workflowBundlePath = reader.string('REDELIVER_WORKFLOW_BUNDLE');
  if (workflowBundlePath !== undefined && !existsSync(workflowBundlePath))
    reader.problem(
      'REDELIVER_WORKFLOW_BUNDLE',
      `no file at ${JSON.stringify(workflowBundlePath)} (build one with \`redeliver bundle --out FILE\`)`,
    );

  const settings: WorkerSettings = {
    ...client,
    maxConcurrentAttempts: reader.positiveInt('REDELIVER_MAX_CONCURRENT_ATTEMPTS', DEFAULT_MAX_CONCURRENT_ATTEMPTS),
    shutdownGraceMs: graceMs,
    allowAddresses,
    logLevel: readLogLevel(reader),
    tracesExporter: reader.oneOf('OTEL_TRACES_EXPORTER', TRACES_EXPORTERS, 'none'),
    serviceName: reader.string('OTEL_SERVICE_NAME') ?? 'redeliver-worker',
    retryBudget: DEFAULT_RETRY_BUDGET,
    endpointLimits: readEndpointLimits(reader),
    endpointHealth: true,
    endpointTimeoutFloorMs: readTimeoutFloor(reader),
    maxEndpointsPerTenant: readMaxEndpointsPerTenant(reader),
    operatorEvents: readOperatorEvents(reader, signingSecretsFromEnvironment(reader.env)),
    outageHold: reader.oneOf('REDELIVER_OUTAGE_HOLD', ['on', 'off'], 'on') === 'on',
    recoveryMaxInFlight: reader.positiveInt('REDELIVER_RECOVERY_MAX_IN_FLIGHT', DEFAULT_RECOVERY_MAX_IN_FLIGHT),
  };
  const workflowTasks = reader.positiveInt('REDELIVER_MAX_CONCURRENT_WORKFLOW_TASKS');
  settings.retryBudget = readRetryBudget(reader);
  settings.endpointHealth = reader.boolean('REDELIVER_ENDPOINT_HEALTH') ?? true;
  if (workflowTasks !== undefined) settings.maxConcurrentWorkflowTasks = workflowTasks;
  if (workflowBundlePath !== undefined) settings.workflowBundlePath = workflowBundlePath;
  const prometheus = readPrometheusAddress(reader);
  if (prometheus !== undefined) settings.prometheusAddress = prometheus;
  const health = reader.hostPort('REDELIVER_HEALTH_ADDRESS', '0.0.0.0:8080');
  if (health !== undefined) settings.healthAddress = health;
  reader.done();
  return settings;
}

/** REDELIVER_SHUTDOWN_GRACE: how long work in flight may go on after SIGTERM (a worker's attempts, the API's requests). */
export function readShutdownGrace(reader: EnvReader): number {
  const shutdownGrace = reader.string('REDELIVER_SHUTDOWN_GRACE');
  const graceMs = shutdownGrace === undefined ? DEFAULT_SHUTDOWN_GRACE_MS : parseDuration(shutdownGrace);
  if (graceMs !== undefined && graceMs >= 0) return graceMs;
  reader.problem(
    'REDELIVER_SHUTDOWN_GRACE',
    `must be a duration such as 20s or 1m (a bare number is ms), got ${JSON.stringify(shutdownGrace)}`,
  );
  return DEFAULT_SHUTDOWN_GRACE_MS;
}

/** REDELIVER_ENDPOINT_TIMEOUT_FLOOR: a duration, 0 for none. */
function readTimeoutFloor(reader: EnvReader): number {
  const raw = reader.string('REDELIVER_ENDPOINT_TIMEOUT_FLOOR');
  const ms = raw === undefined ? DEFAULT_TIMEOUT_FLOOR_MS : parseDuration(raw);
  if (ms !== undefined && ms >= 0 && ms <= MAX_TIMEOUT_FLOOR_MS) return ms;
  reader.problem(
    'REDELIVER_ENDPOINT_TIMEOUT_FLOOR',
    `must be a duration from 0 to 5m such as 1s or 500ms (a bare number is ms), got ${JSON.stringify(raw)}`,
  );
  return DEFAULT_TIMEOUT_FLOOR_MS;
}

/** A client's settings, each bad variable a problem of `reader`'s (the bridge adds its own: bridgeSettingsFromEnv). */
export function readClientSettings(reader: EnvReader): ClientSettings {
  const temporal = readTemporalConnection(reader);
  const taskQueue = reader.string('REDELIVER_TASK_QUEUE') ?? DEFAULT_TASK_QUEUE;
  const encryptionKeys = readKeyRing(reader);
  // any exporter but none: the application registered a tracer provider (a worker checks it is one of TRACES_EXPORTERS)
  const exporter = reader.string('OTEL_TRACES_EXPORTER');
  const tracing = exporter !== undefined && exporter !== 'none';
  const singleSubmit = reader.oneOf('REDELIVER_SINGLE_SUBMIT', ['standalone', 'workflow'], 'workflow');
  return { temporal, taskQueue, ...(encryptionKeys && { encryptionKeys }), tracing, singleSubmit };
}

function readRuntimeSettings(reader: EnvReader): RuntimeSettings {
  const logLevel = readLogLevel(reader);
  const prometheusAddress = readPrometheusAddress(reader);
  return { logLevel, ...(prometheusAddress !== undefined && { prometheusAddress }) };
}

function readLogLevel(reader: EnvReader): LogLevel {
  return reader.oneOf('REDELIVER_LOG_LEVEL', LOG_LEVELS, 'WARN');
}

function readPrometheusAddress(reader: EnvReader): string | undefined {
  return reader.hostPort('REDELIVER_PROMETHEUS_ADDRESS', '0.0.0.0:9464');
}

/** REDELIVER_ENDPOINT_MAX_IN_FLIGHT and REDELIVER_ENDPOINT_RATE: the limits of an endpoint without its own, `off` (the default) for none. */
function readEndpointLimits(reader: EnvReader): EndpointLimits {
  const { change, problems } = checkSettingsChange({
    maxInFlight: boundFrom(reader.string('REDELIVER_ENDPOINT_MAX_IN_FLIGHT')),
    rate: reader.string('REDELIVER_ENDPOINT_RATE'),
  });
  const variables = { maxInFlight: 'REDELIVER_ENDPOINT_MAX_IN_FLIGHT', rate: 'REDELIVER_ENDPOINT_RATE' } as const;
  for (const p of problems)
    reader.problem(variables[p.field as keyof typeof variables], p.message.replace(', "off", or null for the default', ' or "off"'));
  return limitsOf(change as EndpointSettings, NO_LIMITS);
}

/** REDELIVER_MAX_ENDPOINTS_PER_TENANT: a whole number above 0, or `off` for no bound (docs/endpoint-health.md, "Endpoint workflows per tenant"). */
function readMaxEndpointsPerTenant(reader: EnvReader): number | null {
  if (reader.string('REDELIVER_MAX_ENDPOINTS_PER_TENANT')?.trim() === 'off') return null;
  return reader.positiveInt('REDELIVER_MAX_ENDPOINTS_PER_TENANT', DEFAULT_MAX_ENDPOINTS_PER_TENANT);
}

/** A whole number as typed, a number; anything else as it is (the check names it). */
function boundFrom(raw: string | undefined): unknown {
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : raw;
}

/** REDELIVER_RETRY_BUDGET: retries per second to one endpoint (`10`, `2.5`) or `off`; REDELIVER_RETRY_BUDGET_BURST: retries at once on top. */
function readRetryBudget(reader: EnvReader): RetryBudgetOptions | null {
  const raw = reader.string('REDELIVER_RETRY_BUDGET')?.trim();
  const burst = reader.positiveInt('REDELIVER_RETRY_BUDGET_BURST', DEFAULT_RETRY_BUDGET.burst);
  if (raw === 'off') return null;
  if (raw === undefined || raw === '') return { perSecond: DEFAULT_RETRY_BUDGET.perSecond, burst };
  const perSecond = Number(raw.replace(/\/s$/, ''));
  if (!Number.isFinite(perSecond) || perSecond <= 0) {
    reader.problem(
      'REDELIVER_RETRY_BUDGET',
      `must be retries per second to one endpoint above 0 (e.g. 10 or 2.5/s), or off; got ${JSON.stringify(raw)}`,
    );
    return DEFAULT_RETRY_BUDGET;
  }
  return { perSecond, burst };
}
