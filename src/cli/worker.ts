import type { Command } from 'commander';
import { workerSettingsFromEnv } from '../config/settings';
import { startHealthServer } from '../telemetry/health';
import { createWorker, installRuntime, runWorker } from '../worker';
import { wholeNumberFlag } from './number-flags';

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
      // every flag and variable is checked before anything starts, and a bad one is named
      const concurrency = flags.concurrency === undefined ? undefined : wholeNumberFlag('--concurrency', flags.concurrency, 1);
      const settings = workerSettingsFromEnv();
      installRuntime(settings);
      const worker = await createWorker({
        settings,
        ...(flags.address && { address: flags.address }),
        ...(flags.namespace && { namespace: flags.namespace }),
        ...(flags.taskQueue && { taskQueue: flags.taskQueue }),
        ...(concurrency !== undefined && { maxConcurrentAttempts: concurrency }),
      });
      const health = settings.healthAddress ? await startHealthServer(settings.healthAddress, () => worker.getState()) : undefined;
      process.stderr.write(
        `worker polling task queue "${worker.options.taskQueue}" in namespace "${worker.options.namespace}" ` +
          `(SSRF guard allows: ${settings.allowAddresses.describe()}; payload encryption ${settings.encryptionKeys ? `on, key ${settings.encryptionKeys.current.id}` : 'off'}; ` +
          `SIGTERM drains for ${settings.shutdownGraceMs / 1000} s; Ctrl-C stops it)\n`,
      );
      try {
        // SIGINT/SIGTERM: the SDK stops polling, attempts in flight get the grace time to finish, the rest are handed back
        await runWorker(worker);
      } finally {
        await health?.close();
      }
      process.stderr.write('worker stopped\n');
    });
}
