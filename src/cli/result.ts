import type { Command } from 'commander';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { EXIT, emit } from './output';

export function registerResult(program: Command): void {
  withConnectionFlags(
    program
      .command('result')
      .argument('<deliveryId>', 'delivery id, as submit printed it')
      .description('wait for a delivery to end and print its outcome (exit 0 delivered, 1 otherwise)')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver result delivery/acme/sensor-1/msg-42 --json')
    .action(async (deliveryId: string, flags: ConnectionFlags & { json?: boolean }) => {
      const redeliver = await connect(flags);
      try {
        const result = await redeliver.getHandle(deliveryId).result();
        emit(!!flags.json, result, () => `${result.deliveryId}: ${result.outcome} after ${result.attempts} attempt(s) — ${result.reason}`);
        if (result.outcome !== 'delivered') process.exitCode = EXIT.notDelivered;
      } finally {
        await redeliver.close();
      }
    });
}
