import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { Redeliver } from '../../src/client';
import { encryptingDataConverter } from '../../src/encryption/data-converter';
import type { KeyRing } from '../../src/encryption/keys';
import { DEFAULT_RETRY_BUDGET, RetryBudget, type RetryBudgetOptions } from '../../src/endpoints/budget';
import { EndpointReporter } from '../../src/endpoints/reporter';
import type { AddressGuard } from '../../src/transports/address-guard';
import { createHttpAgent } from '../../src/transports/http';
import { createMqttPool, type MqttPool } from '../../src/transports/mqtt';

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
}

/** A client, a worker and a Redeliver API on a task queue of their own, on the suite's dev server. */
export async function startHarness(address = testAddress(), options: HarnessOptions = {}): Promise<Harness> {
  quietRuntime();
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const dataConverter = options.encryptionKeys ? encryptingDataConverter(options.encryptionKeys) : undefined;
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, ...(dataConverter && { dataConverter }) });
  const nativeConnection = await NativeConnection.connect({ address });
  const http = createHttpAgent({ allow: options.allowAddresses ?? ['loopback'] });
  const mqtt = createMqttPool({ allow: options.allowAddresses ?? ['loopback'] });
  // the worker's own client, as createWorker makes it: endpoint reports, a paused delivery's progress
  const workerClient = new Client({ connection: nativeConnection, ...(dataConverter && { dataConverter }) });
  const budgetOptions = options.retryBudget === undefined ? DEFAULT_RETRY_BUDGET : options.retryBudget;
  const reporter = (options.endpointHealth ?? true) ? new EndpointReporter(workerClient, taskQueue) : null;
  await reporter?.start();
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    ...(reporter && { identity: reporter.identity }),
    workflowBundle: { codePath: process.env.REDELIVER_TEST_BUNDLE! },
    activities: createActivities({ http, mqtt, client: workerClient, budget: budgetOptions && new RetryBudget(budgetOptions), reporter }),
    ...(dataConverter && { dataConverter }),
  });
  const running = worker.run();
  return {
    taskQueue,
    client,
    redeliver: new Redeliver(client, { taskQueue }),
    worker,
    mqtt,
    reporter,
    async stop() {
      await reporter?.stop();
      worker.shutdown();
      await running;
      await http.close();
      await mqtt.close();
      await nativeConnection.close();
      await connection.close();
    },
  };
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
