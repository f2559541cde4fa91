import type { Command } from 'commander';
import type { DeliveryStatus } from '../delivery/types';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { emit } from './output';

export function registerStatus(program: Command): void {
  withConnectionFlags(
    program
      .command('status')
      .argument('<deliveryId>', 'delivery id, as submit printed it')
      .description('where a delivery stands: state, attempts, next attempt, last error')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver status delivery/acme/sensor-1/msg-42 --json')
    .action(async (deliveryId: string, flags: ConnectionFlags & { json?: boolean }) => {
      const redeliver = await connect(flags);
      try {
        const status = await redeliver.getHandle(deliveryId).status();
        emit(!!flags.json, status, () => formatStatus(status));
      } finally {
        await redeliver.close();
      }
    });
}

/** The status as lines (emit keeps what ids and endpoints say on theirs). */
export function formatStatus(s: DeliveryStatus): string[] {
  const lines = [
    `${s.deliveryId}`,
    `  ${s.summary}`,
    `  state       ${s.state}`,
    `  kind        ${s.kind}${s.kind === 'telemetry' ? ` (QoS ${s.qos ?? 'unknown'})` : ''} → ${s.endpoint}`,
    `  attempts    ${s.attempts}`,
  ];
  if (s.firstAttemptAt) lines.push(`  first       ${s.firstAttemptAt}`);
  if (s.lastAttemptAt) lines.push(`  last        ${s.lastAttemptAt}`);
  if (s.nextAttemptAt) lines.push(`  next        ${s.nextAttemptAt}`);
  if (s.lastError) lines.push(`  last error  ${s.lastError.class} ${s.lastError.code}: ${s.lastError.reason}`);
  if (s.batch) lines.push(`  batch       ${s.batch.workflowId}`);
  if (s.hold) lines.push(`  hold        ${s.hold.holdId}`);
  return lines;
}
