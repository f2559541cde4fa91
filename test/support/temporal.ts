import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { Redeliver } from '../../src/client';
import { createHttpAgent } from '../../src/transports/http';

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

/** A client, a worker and a Redeliver API on a task queue of their own, on the suite's dev server. */
export async function startHarness(address = testAddress()): Promise<Harness> {
  quietRuntime();
  const taskQueue = `test-${randomUUID()}`;
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    workflowBundle: { codePath: process.env.REDELIVER_TEST_BUNDLE! },
    activities: createActivities({ http: createHttpAgent() }),
  });
  const running = worker.run();
  return {
    taskQueue,
    client,
    redeliver: new Redeliver(client, { taskQueue }),
    worker,
    async stop() {
      worker.shutdown();
      await running;
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
  stop(): Promise<void>;
}
