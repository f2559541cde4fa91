import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { Activities } from '../../src/contract';
import { createWorker, runWorker } from '../../src/worker';
import { quietRuntime, testAddress } from './temporal';

export interface StubbedWorker {
  env: TestWorkflowEnvironment;
  client: Client;
  taskQueue: string;
}

/**
 * Temporal's test environment on the run's dev server, and a worker made by createWorker (the production
 * wiring, nothing read from this machine's environment) whose activities are `activities`, on a task
 * queue of its own: for the tests of one file, started before them and stopped after. `beforeStop` ends
 * what the stubs still hold open.
 */
export function useStubbedWorker(activities: Partial<Activities>, beforeStop: () => void = () => undefined): StubbedWorker {
  const ref = {} as StubbedWorker & { worker: Worker; running: Promise<void> };
  beforeAll(async () => {
    quietRuntime();
    ref.env = await TestWorkflowEnvironment.createFromExistingServer({ address: testAddress() });
    ref.client = ref.env.client;
    ref.taskQueue = `workflow-${randomUUID()}`;
    ref.worker = await createWorker({
      connection: ref.env.nativeConnection,
      taskQueue: ref.taskQueue,
      workflowBundlePath: process.env.REDELIVER_TEST_BUNDLE!,
      env: {},
      tracing: null,
      encryptionKeys: null,
      // the budget and the endpoints' reports count real attempts: the stubs make none
      retryBudget: null,
      endpointHealth: false,
      // as the harness's: a test's worker stops at once
      shutdownGraceTime: 0,
      workerOptions: { activities },
    });
    ref.running = runWorker(ref.worker);
  });
  afterAll(async () => {
    beforeStop();
    ref.worker?.shutdown();
    await ref.running;
    await ref.env?.teardown();
  });
  return ref;
}
