import type { Command } from 'commander';
import type { DeliveryHandle } from '../client/index';
import type { DeliveryStatus } from '../delivery/types';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { emit } from './output';
import { formatStatus } from './status';

/** The live controls share one shape: a delivery id in, the delivery's status out. */
const CONTROLS: { name: string; description: string; run: (h: DeliveryHandle, reason?: string) => Promise<DeliveryStatus | void> }[] = [
  {
    name: 'retry-now',
    description: 'end the current wait: the next attempt starts now (refused unless waiting)',
    run: (h) => h.retryNow(),
  },
  {
    name: 'pause',
    description: 'no further attempt until resumed; an attempt in flight finishes; max age does not run while paused',
    run: (h, reason) => h.pause(reason),
  },
  { name: 'resume', description: 'let a paused delivery go on (at once if its planned time has passed)', run: (h) => h.resume() },
  { name: 'cancel', description: 'cancel the delivery: no further attempt; its outcome is cancelled', run: (h) => h.cancel() },
];

export function registerControls(program: Command): void {
  for (const control of CONTROLS) {
    const command = program
      .command(control.name)
      .argument('<deliveryId>', 'delivery id, as submit printed it')
      .description(control.description)
      .option('--json', 'print JSON');
    if (control.name === 'pause') command.option('--reason <text>', 'why, shown in status and the UI');
    withConnectionFlags(command)
      .addHelpText(
        'after',
        `\nExample:\n  $ redeliver ${control.name} delivery/acme/sensor-1/msg-42${control.name === 'pause' ? ' --reason "endpoint maintenance"' : ''}`,
      )
      .action(async (deliveryId: string, flags: ConnectionFlags & { json?: boolean; reason?: string }) => {
        const redeliver = await connect(flags);
        try {
          const handle = redeliver.getHandle(deliveryId);
          const status = (await control.run(handle, flags.reason)) ?? (await handle.status());
          emit(!!flags.json, status, () => formatStatus(status));
        } finally {
          await redeliver.close();
        }
      });
  }
}
