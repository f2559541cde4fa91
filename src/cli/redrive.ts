import type { Command } from 'commander';
import { DEAD_LETTER_STATES } from '../delivery/filter';
import { InvalidInputError } from '../errors';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { filterFromFlags, withFilterFlags, type FilterFlags } from './filter-flags';
import { wholeNumberFlag } from './number-flags';
import { EXIT, emit } from './output';
import { progressBar } from './progress';

export function registerRedrive(program: Command): void {
  withConnectionFlags(
    withFilterFlags(
      program
        .command('redrive')
        .argument('[deliveryId]', 'one dead letter; or give --all with filter flags')
        .description('redrive dead letters: a new run of the same delivery id, with the same message')
        .option('--all', 'every dead letter matching the filter flags')
        .option('--concurrency <n>', 'redrives in flight at once (default 16)', '16')
        .option('--json', 'print JSON'),
      [...DEAD_LETTER_STATES],
    ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ redeliver redrive delivery/acme/sensor-1/msg-42\n  $ redeliver redrive --all --endpoint ingest.example.com --state expired,exhausted',
    )
    .action(
      async (
        deliveryId: string | undefined,
        flags: FilterFlags & ConnectionFlags & { all?: boolean; concurrency: string; json?: boolean },
      ) => {
        if (!deliveryId === !flags.all)
          throw new InvalidInputError([{ field: 'deliveryId', message: 'give one delivery id, or --all with filter flags' }], 'flags');
        // each redrive in flight is a few requests to Temporal at once: more than a thousand only loads its frontend
        const concurrency = wholeNumberFlag('--concurrency', flags.concurrency, 1, 1000);
        const filter = flags.all ? filterFromFlags(flags, [...DEAD_LETTER_STATES]) : {};
        const redeliver = await connect(flags);
        try {
          if (deliveryId) {
            const handle = await redeliver.redrive(deliveryId);
            emit(!!flags.json, { deliveryId, redriven: handle.created }, () =>
              handle.created ? `redriven ${deliveryId}` : `${deliveryId} was redriven already: it is running again, or has a newer run`,
            );
            return;
          }
          let bar: ReturnType<typeof progressBar> | undefined;
          const outcome = await redeliver.redriveAll(filter as never, {
            concurrency,
            onProgress: (done, total) => {
              bar ??= progressBar('redrive', total);
              bar.update(done);
            },
          });
          bar?.stop();
          emit(!!flags.json, outcome, () => [
            `redriven ${outcome.redriven.length}, already redriven ${outcome.alreadyRedriven.length}, failed ${outcome.failed.length}`,
            ...outcome.failed.map((f) => `  ${f.deliveryId}: ${f.error}`),
          ]);
          if (outcome.failed.length) process.exitCode = EXIT.failure;
        } finally {
          await redeliver.close();
        }
      },
    );
}
