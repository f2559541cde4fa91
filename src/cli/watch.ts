import type { Command } from 'commander';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { filterFromFlags, withFilterFlags, type FilterFlags } from './filter-flags';
import { wholeNumberFlag } from './number-flags';
import { printable } from './output';

const ENDED = ['delivered', 'rejected', 'expired', 'exhausted', 'dropped', 'cancelled'];

export function registerWatch(program: Command): void {
  withConnectionFlags(
    withFilterFlags(
      program
        .command('watch')
        .argument('[deliveryId]', 'one delivery; or filter flags for many')
        .description('a live view: prints each change of a delivery (until it ends) or of every match of a filter (until Ctrl-C)')
        .option('--interval <ms>', 'how often to look (default 1000)', '1000')
        .option('--json', 'print one JSON object per change (NDJSON)'),
    ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ redeliver watch delivery/acme/sensor-1/msg-42\n  $ redeliver watch --state waiting,paused --endpoint ingest.example.com',
    )
    .action(async (deliveryId: string | undefined, flags: FilterFlags & ConnectionFlags & { interval: string; json?: boolean }) => {
      // setTimeout's longest wait: a longer one would fire at once
      const interval = wholeNumberFlag('--interval', flags.interval, 100, 2 ** 31 - 1);
      const filter = deliveryId ? undefined : filterFromFlags(flags);
      const redeliver = await connect(flags);
      const seen = new Map<string, string>();
      const print = (id: string, value: object, line: string) => {
        const key = JSON.stringify(value);
        if (seen.get(id) === key) return;
        seen.set(id, key);
        process.stdout.write(flags.json ? `${JSON.stringify(value)}\n` : `${new Date().toISOString().slice(11, 19)} ${printable(line)}\n`);
      };
      let stop = false;
      process.once('SIGINT', () => (stop = true));
      try {
        while (!stop) {
          if (deliveryId) {
            const s = await redeliver.getHandle(deliveryId).status();
            print(
              deliveryId,
              { deliveryId, state: s.state, attempts: s.attempts, summary: s.summary },
              `${s.state} (${s.attempts} attempts) ${s.summary}`,
            );
            if (ENDED.includes(s.state)) break;
          } else {
            // read again every interval: the deliveries alone (a batched message is read by its id: watch <deliveryId>)
            for await (const row of redeliver.list(filter, { batched: false })) {
              print(
                row.deliveryId,
                row,
                `${row.state.padEnd(9)} ${String(row.attempts ?? '').padStart(4)} ${row.lastErrorClass ?? ''} ${row.deliveryId}`,
              );
            }
          }
          await new Promise((r) => setTimeout(r, interval));
        }
      } finally {
        await redeliver.close();
      }
    });
}
