import type { Command } from 'commander';
import { DEAD_LETTER_STATES } from '../delivery/filter';
import { targetInWords } from '../delivery/summary';
import type { DeliverySummary } from '../client/index';
import type { DeliveryResult } from '../delivery/types';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { filterFromFlags, withFilterFlags, type FilterFlags } from './filter-flags';
import { formatTable, limitOf } from './list';
import { emit } from './output';

export function registerDeadLetters(program: Command): void {
  const command = program.command('dead-letters').description('list dead letters (rejected, expired, exhausted, dropped) or show one');
  withConnectionFlags(
    withFilterFlags(
      command
        .command('list', { isDefault: true })
        .description('dead letters matching a filter, newest first')
        .option('--limit <n>', 'at most this many (default 100)', '100')
        .option('--json', 'print JSON (an array)'),
      [...DEAD_LETTER_STATES],
    ),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver dead-letters list --tenant acme --error-class client --since 24h --json')
    .action(async (flags: FilterFlags & ConnectionFlags & { limit: string; json?: boolean }) => {
      const filter = filterFromFlags(flags, [...DEAD_LETTER_STATES]);
      const limit = limitOf(flags.limit);
      const redeliver = await connect(flags);
      try {
        const rows: DeliverySummary[] = [];
        for await (const row of redeliver.deadLetters(filter as never)) {
          rows.push(row);
          if (rows.length >= limit) break;
        }
        emit(!!flags.json, rows, () => formatTable(rows));
      } finally {
        await redeliver.close();
      }
    });
  withConnectionFlags(
    command
      .command('show')
      .argument('<deliveryId>', 'delivery id')
      .description('one dead letter: its message, last error, attempts and times')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver dead-letters show delivery/acme/sensor-1/msg-42')
    .action(async (deliveryId: string, flags: ConnectionFlags & { json?: boolean }) => {
      const redeliver = await connect(flags);
      try {
        const result = await redeliver.getHandle(deliveryId).result();
        emit(!!flags.json, result, () => formatDeadLetter(result));
      } finally {
        await redeliver.close();
      }
    });
}

/** A dead letter as lines (emit keeps the body, reasons and ids on theirs). */
function formatDeadLetter(result: DeliveryResult): string[] {
  return [
    `${result.deliveryId}: ${result.outcome} after ${result.attempts} attempt(s)`,
    `  reason      ${result.reason}`,
    result.lastError ? `  last error  ${result.lastError.class} ${result.lastError.code}: ${result.lastError.reason}` : '',
    `  first       ${result.firstAttemptAt ?? '-'}`,
    `  last        ${result.lastAttemptAt ?? '-'}`,
    result.message ? `  target      ${targetInWords(result.message.target)}` : '',
    result.message ? `  message     ${result.message.contentType}: ${result.message.body.slice(0, 500)}` : '',
  ].filter(Boolean);
}
