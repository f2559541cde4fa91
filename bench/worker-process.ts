/**
 * A benchmark worker in a process of its own, so that its CPU time and memory are its own:
 * `node worker-process.js <redeliver|baseline> <address> <taskQueue> [budget=off] [health=off]`; answers
 * 'stats' messages. `budget=off`: no per-endpoint retry budget; `health=off`: no endpoint health reports
 * (redeliver only; both are on by default, as in production).
 */
import { NativeConnection, Runtime, DefaultLogger, Worker, type WorkerOptions } from '@temporalio/worker';
import { createHttpAgent } from '../src/transports/http';
import { createWorker, runWorker } from '../src/worker';
import { createBaselineActivities } from './baseline/activities';
import { answerStats } from './process-stats';

async function main(): Promise<void> {
  const [kind, address, taskQueue, ...flags] = process.argv.slice(2);
  const usage = 'usage: worker-process <redeliver|baseline> <address> <taskQueue> [budget=off] [health=off]';
  if (!kind || !address || !taskQueue) throw new Error(usage);
  const unknown = flags.filter((f) => f !== 'budget=off' && f !== 'health=off');
  if (unknown.length > 0) throw new Error(`unknown flag ${unknown.join(' ')}; ${usage}`);
  const off = {
    ...(flags.includes('budget=off') && { retryBudget: null }),
    ...(flags.includes('health=off') && { endpointHealth: false }),
  };
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: ['SIGTERM', 'SIGINT'] });
  const common = { maxConcurrentActivityTaskExecutions: 500, maxConcurrentWorkflowTaskExecutions: 200 };
  const worker =
    kind === 'redeliver'
      ? await createWorker({ address, taskQueue, maxConcurrentAttempts: 500, ...benchWorkerOptions(), ...off, workerOptions: common })
      : await baselineWorker(address, taskQueue, common);
  answerStats();
  // runWorker closes what createWorker opened; the baseline's connection goes with the process
  const running = kind === 'redeliver' ? runWorker(worker) : worker.run();
  process.send?.('ready');
  await running;
  // the IPC channel would keep the process alive
  process.exit(0);
}

/** The plain SDK pattern redeliver is compared with: a wiring of its own, on purpose. */
async function baselineWorker(address: string, taskQueue: string, common: Partial<WorkerOptions>): Promise<Worker> {
  return Worker.create({
    connection: await NativeConnection.connect({ address }),
    taskQueue,
    workflowsPath: require.resolve('./baseline/workflows'),
    activities: createBaselineActivities(createHttpAgent({ allow: ['loopback'] })),
    ...common,
  });
}

/** Loopback targets are allowed for benchmarks (the sink runs on 127.0.0.1). */
function benchWorkerOptions() {
  return { allowAddresses: ['loopback'] };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
