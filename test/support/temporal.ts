import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { connectClient } from '../../src/temporal/sdk-adapter';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type Worker } from '@temporalio/worker';
import { Redeliver } from '../../src/client/index';
import { encryptingDataConverter } from '../../src/encryption/data-converter';
import type { KeyRing } from '../../src/encryption/keys';
import { DEFAULT_RETRY_BUDGET, type RetryBudgetOptions } from '../../src/endpoints/budget';
import type { EndpointReporter } from '../../src/worker-services/endpoint-reporter';
import type { AddressGuard } from '../../src/transports/address-guard';
import type { MqttPool } from '../../src/transports/mqtt';
import type { SigningSecretResolver } from '../../src/transports/signing';
import { NO_LIMITS, type EndpointLimits } from '../../src/endpoints/controls';
import { createWorker, runWorker } from '../../src/worker';
import { partsOf } from '../../src/worker-services/worker-parts';

let runtimeInstalled = false;

/** Quiets the SDK's logger: tests read outcomes, not logs. */
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      shutdownSignals: [],
      // the replay tests provoke nondeterminism on purpose: keep the core's warnings about it out of the output
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }) } },
    });
  } catch {
    // already installed by another test in this process
  }
}

export function testAddress(): string {
  const address = process.env.REDELIVER_TEST_ADDRESS;
  if (!address) throw new Error('REDELIVER_TEST_ADDRESS is not set: run the tests through jest (global setup starts Temporal)');
  return address;
}

export interface HarnessOptions {
  /**
   * The SSRF guard's allow-list for the worker's attempts. Default `['loopback']`: the tests' endpoints
   * are local servers, which the guard refuses unless allowed — explicitly, as here.
   */
  allowAddresses?: AddressGuard | readonly string[];
  /** Encrypt payloads with these keys, in the client and the worker alike. Default: none. */
  encryptionKeys?: KeyRing;
  /** Default: a task queue of its own. */
  taskQueue?: string;
  /** The worker's per-endpoint retry budget, as in production by default (10/s, burst 20); null: none. */
  retryBudget?: RetryBudgetOptions | null;
  /** Report attempts to the endpoints' workflows, as in production. Default true. */
  endpointHealth?: boolean;
  /** Signing secrets by name. Default: none (a test must not take them from the developer's environment). */
  signingSecrets?: SigningSecretResolver;
  /** Every endpoint's default limits; null: none, not even an endpoint's own. Default: none but each endpoint's own, as in production. */
  endpointLimits?: EndpointLimits | null;
  /** Distinct endpoints one tenant's attempts may open endpoint workflows for (10 min); null: no bound. Default: production's (100). */
  maxEndpointsPerTenant?: number | null;
  /**
   * Whether a batch's messages wait in an outage hold while their endpoint fails (REDELIVER_OUTAGE_HOLD). Default: on,
   * as in production. Off for tests of the delivery of its own a failed message gets: their messages fail one by one on
   * purpose, to one endpoint, which then looks failing.
   */
  outageHold?: boolean;
  /** How long the worker uses its copy of an endpoint's control, and the client's control changes wait for. Default: production's (2 s). */
  controlTtlMs?: number;
  /** How the harness's Redeliver makes a single submit's first attempt (docs/batches.md, "A single submit"). Default `workflow`, as production's. */
  singleSubmit?: 'standalone' | 'workflow';
}

/**
 * A client, a worker and a Redeliver API on a task queue of their own, on the suite's dev server. The
 * worker is the production one (createWorker), with what a test must not take from the developer's
 * environment given explicitly.
 */
export async function startHarness(address = testAddress(), options: HarnessOptions = {}): Promise<Harness> {
  quietRuntime();
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const worker = await createTestWorker(address, taskQueue, options);
  const running = runWorker(worker);
  const dataConverter = options.encryptionKeys ? encryptingDataConverter(options.encryptionKeys) : undefined;
  const connection = await connectClient({ address });
  const client = new Client({ connection, ...(dataConverter && { dataConverter }) });
  const { mqtt, reporter } = partsOf(worker)!;
  return {
    taskQueue,
    client,
    redeliver: new Redeliver(client, {
      taskQueue,
      singleSubmit: options.singleSubmit ?? 'workflow',
      ...(options.controlTtlMs !== undefined && { controlTtlMs: options.controlTtlMs }),
    }),
    worker,
    mqtt,
    reporter,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** The production worker on the tests' workflow bundle, allowed to reach loopback endpoints unless told otherwise. */
export function createTestWorker(address: string, taskQueue: string, options: HarnessOptions = {}): Promise<Worker> {
  return createWorker({
    address,
    namespace: 'default',
    taskQueue,
    workflowBundlePath: options.encryptionKeys ? process.env.REDELIVER_TEST_BUNDLE_ENCRYPTED! : process.env.REDELIVER_TEST_BUNDLE!,
    allowAddresses: options.allowAddresses ?? ['loopback'],
    encryptionKeys: options.encryptionKeys ?? null,
    retryBudget: options.retryBudget === undefined ? DEFAULT_RETRY_BUDGET : options.retryBudget,
    endpointHealth: options.endpointHealth ?? true,
    signingSecrets: options.signingSecrets ?? (() => undefined),
    endpointLimits: options.endpointLimits === undefined ? NO_LIMITS : options.endpointLimits,
    ...(options.maxEndpointsPerTenant !== undefined && { maxEndpointsPerTenant: options.maxEndpointsPerTenant }),
    ...(options.controlTtlMs !== undefined && { controlTtlMs: options.controlTtlMs }),
    ...(options.outageHold !== undefined && { outageHold: options.outageHold }),
    tracing: null,
    // the SDK's defaults, which the tests' bounds were measured with on a loaded 2-core machine: 100 attempts
    // in flight (production's 200 made the soak a third slower there in one comparison), a worker that stops at once
    maxConcurrentAttempts: 100,
    shutdownGraceTime: 0,
  });
}

export interface Harness {
  taskQueue: string;
  client: Client;
  redeliver: Redeliver;
  worker: Worker;
  /** The worker's MQTT connection pool: tests read its stats. */
  mqtt: MqttPool;
  /** The worker's endpoint reporter, when endpoint health is on. */
  reporter: EndpointReporter | null;
  stop(): Promise<void>;
}
