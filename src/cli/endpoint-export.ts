import type { Command } from 'commander';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { OutageRecording } from '../endpoints/recording';
import { InvalidInputError, type Problem } from '../errors';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { timeFlag } from './filter-flags';
import { emit } from './output';

export function registerEndpointExport(program: Command): void {
  // `endpoint` has other subcommands (registerEndpoint): whichever registers first makes the parent
  const endpoint =
    program.commands.find((c) => c.name() === 'endpoint') ??
    program.command('endpoint').description('one endpoint: its settings and records (see also: endpoints, downtime)');
  withConnectionFlags(
    endpoint
      .command('export <host:port>')
      .description(
        "print the endpoint's recorded attempts, failure periods and arrivals as JSON, a file `simulate --from-file` replays (docs/outage-replay.md)",
      )
      .option('--since <time>', 'from this time: ISO date, or a duration ago such as 2h, 7d (default: all that is kept)'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver endpoint export ingest.example.com --since 7d > outage.json')
    .action(async (host: string, flags: ConnectionFlags & { since?: string }) => {
      const problems: Problem[] = [];
      const since = timeFlag('--since', flags.since, problems);
      if (problems.length) throw new InvalidInputError(problems, 'flags');
      emit(true, await fetchRecording(flags, host, since), () => []);
    });
}

/** The endpoint's recording from its workflow; an error a person reads when no worker has reported to it. */
export async function fetchRecording(flags: ConnectionFlags, endpoint: string, since: Date | undefined): Promise<OutageRecording> {
  const redeliver = await connect(flags);
  try {
    return await redeliver.endpointRecording(endpoint, since);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new Error(`no worker has reported attempts to ${endpoint} yet`);
    throw err;
  } finally {
    await redeliver.close();
  }
}
