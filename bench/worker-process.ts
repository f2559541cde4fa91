/**
 * A benchmark worker in a process of its own, so that its CPU time and memory are its own:
 * `node worker-process.js <redeliver|baseline> <address> <taskQueue>`; answers 'stats' messages.
 */
import { NativeConnection, Runtime, DefaultLogger, Worker } from '@temporalio/worker';
import { createHttpAgent } from '../src/transports/http';
import { createWorker } from '../src/worker';
import { createBaselineActivities } from './baseline/activities';

async function main(): Promise<void> {
  const [kind, address, taskQueue] = process.argv.slice(2);
  if (!kind || !address || !taskQueue) throw new Error('usage: worker-process <redeliver|baseline> <address> <taskQueue>');
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: ['SIGTERM', 'SIGINT'] });
  const connection = await NativeConnection.connect({ address });
  const common = { maxConcurrentActivityTaskExecutions: 500, maxConcurrentWorkflowTaskExecutions: 200 };
  const worker =
    kind === 'redeliver'
      ? await createWorker({ connection, taskQueue, maxConcurrentAttempts: 500, ...benchWorkerOptions(), workerOptions: common })
      : await Worker.create({
          connection,
          taskQueue,
          workflowsPath: require.resolve('./baseline/workflows'),
          activities: createBaselineActivities(createHttpAgent({ allow: ['loopback'] })),
          ...common,
        });
  let peakRss = process.memoryUsage().rss;
  setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100).unref();
  process.on('message', (msg) => {
    if (msg === 'stats') {
      const cpu = process.cpuUsage();
      const rss = process.memoryUsage().rss;
      peakRss = Math.max(peakRss, rss);
      process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, rss, peakRss });
    }
  });
  const running = worker.run();
  process.send?.('ready');
  await running;
  await connection.close();
  // the IPC channel would keep the process alive
  process.exit(0);
}

/** Loopback targets are allowed for benchmarks (the sink runs on 127.0.0.1). */
function benchWorkerOptions() {
  return { allowAddresses: ['loopback'] };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
