import type { Command } from 'commander';
import { createWorker, installRuntime } from '../worker';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: the delivery workflows and their attempts, until SIGINT/SIGTERM')
    .option('--address <host:port>', 'Temporal frontend (default $TEMPORAL_ADDRESS or localhost:7233)')
    .option('--namespace <name>', 'Temporal namespace (default $TEMPORAL_NAMESPACE or default)')
    .option('--task-queue <name>', 'task queue (default $REDELIVER_TASK_QUEUE or redeliver)')
    .option('--concurrency <n>', 'attempts in flight at once (default $REDELIVER_MAX_CONCURRENT_ATTEMPTS or 200)')
    .addHelpText('after', '\nExample:\n  $ TEMPORAL_ADDRESS=temporal.internal:7233 redeliver worker --concurrency 500')
    .action(async (flags: { address?: string; namespace?: string; taskQueue?: string; concurrency?: string }) => {
      installRuntime();
      const worker = await createWorker({
        ...(flags.address && { address: flags.address }),
        ...(flags.namespace && { namespace: flags.namespace }),
        ...(flags.taskQueue && { taskQueue: flags.taskQueue }),
        ...(flags.concurrency && { maxConcurrentAttempts: positiveInt('--concurrency', flags.concurrency) }),
      });
      process.stderr.write(`worker polling task queue "${worker.options.taskQueue}" (Ctrl-C stops it)\n`);
      await worker.run();
    });
}

function positiveInt(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} must be a whole number above 0, got ${JSON.stringify(value)}`);
  return n;
}
