import type { Command } from 'commander';
import { Redeliver, type ConnectOptions } from '../client/index';

export interface ConnectionFlags {
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

/** --address / --namespace / --task-queue, shared by every command that talks to Temporal. */
export function withConnectionFlags(command: Command): Command {
  return command
    .option('--address <host:port>', 'Temporal frontend (default $TEMPORAL_ADDRESS or localhost:7233)')
    .option('--namespace <name>', 'Temporal namespace (default $TEMPORAL_NAMESPACE or default)')
    .option('--task-queue <name>', 'task queue of the workers (default $REDELIVER_TASK_QUEUE or redeliver)');
}

export async function connect(flags: ConnectionFlags, options: ConnectOptions = {}): Promise<Redeliver> {
  return Redeliver.connect({
    ...options,
    ...(flags.address && { address: flags.address }),
    ...(flags.namespace && { namespace: flags.namespace }),
    // unset: Redeliver.connect takes $REDELIVER_TASK_QUEUE (src/config), else the default
    ...(flags.taskQueue && { taskQueue: flags.taskQueue }),
  });
}
