import type { Command } from 'commander';
import type { DeliverySummary } from '../client/index';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { filterFromFlags, withFilterFlags, type FilterFlags } from './filter-flags';
import { wholeNumberFlag } from './number-flags';
import { emit, printable } from './output';
import { listKeyQueue } from './ordering';

export function registerList(program: Command): void {
  withConnectionFlags(
    withFilterFlags(
      program
        .command('list')
        .description('list deliveries matching a filter, newest first')
        .option('--limit <n>', 'at most this many (default 100)', '100')
        .option('--ordering-key <key>', 'with --tenant: the key’s queue, in order, from its sequencer (docs/ordering.md)')
        .option('--json', 'print JSON (an array; with --ordering-key, the key’s status)'),
    ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ redeliver list --state waiting,paused --tenant acme --since 1h\n  $ redeliver list --tenant acme --ordering-key valve-7',
    )
    .action(async (flags: FilterFlags & ConnectionFlags & { limit: string; json?: boolean; orderingKey?: string }) => {
      if (flags.orderingKey !== undefined) return listKeyQueue(flags, limitOf(flags.limit));
      const filter = filterFromFlags(flags);
      const limit = limitOf(flags.limit);
      const redeliver = await connect(flags);
      try {
        const rows: DeliverySummary[] = [];
        for await (const row of redeliver.list(filter)) {
          rows.push(row);
          if (rows.length >= limit) break;
        }
        emit(!!flags.json, rows, () => formatTable(rows));
      } finally {
        await redeliver.close();
      }
    });
}

export function limitOf(value: string): number {
  return wholeNumberFlag('--limit', value, 1);
}

export function formatTable(rows: DeliverySummary[]): string[] {
  if (rows.length === 0) return ['no deliveries match'];
  const header = ['STATE', 'KIND', 'ATTEMPTS', 'LAST ERROR', 'STARTED', 'DELIVERY'];
  // one line per delivery, whatever its id or attributes hold
  const lines = rows.map((r) =>
    [r.state, r.kind ?? '', String(r.attempts ?? ''), r.lastErrorClass ?? '', r.startedAt.slice(0, 19).replace('T', ' '), r.deliveryId].map(
      (c) => printable(c),
    ),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const table = [header, ...lines].map((l) => l.map((c, i) => (i === l.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
  // a process without keys still lists deliveries: say why status and dead-letters show will tell less
  const sealed = rows.filter((r) => r.encrypted).length;
  const note = `(${sealed} of these are encrypted: set REDELIVER_ENCRYPTION_KEYS to read their messages, times and errors)`;
  return sealed ? [...table, note] : table;
}
