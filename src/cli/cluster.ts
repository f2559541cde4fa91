import path from 'node:path';
import type { Command } from 'commander';
import { clusterDown, clusterStatus, clusterUp } from '../cluster/cluster';
import { projectRoot } from '../dev/temporal-cli';
import { InvalidInputError, type Problem } from '../errors';
import { wholeNumber } from './number-flags';
import { emit, EXIT } from './output';

interface UpFlags {
  dir: string;
  port: string;
  historyHosts: string;
  uiPort: string;
  ui: boolean;
}

const DEFAULT_DIR = () => path.join(projectRoot(), '.temporal', 'cluster');

export function registerCluster(program: Command): void {
  const cluster = program
    .command('cluster')
    .description('a Temporal cluster on PostgreSQL on this machine, each service a process of its own (built from source on first use)');
  cluster
    .command('up')
    .description('start it (or start it again on its data) and print TEMPORAL_ADDRESS; it runs on after this command returns')
    .option('--dir <dir>', 'where it keeps its data, state and logs', DEFAULT_DIR())
    .option('--port <port>', 'frontend gRPC port on 127.0.0.1', '7233')
    .option('--history-hosts <n>', 'history service processes sharing the shards', '2')
    .option('--ui-port <port>', 'Temporal UI port', '8080')
    .option('--no-ui', 'no Temporal UI (which is built on first use too)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ export $(redeliver cluster up)          # TEMPORAL_ADDRESS=127.0.0.1:7233\n' +
        '  $ redeliver cluster up --dir /var/tmp/temporal --port 7300 --history-hosts 3 --no-ui',
    )
    .action(async (flags: UpFlags) => {
      const problems: Problem[] = [];
      const port = wholeNumber(problems, '--port', flags.port, 1, 65535);
      const historyHosts = wholeNumber(problems, '--history-hosts', flags.historyHosts, 1, 16);
      const uiPort = flags.ui ? wholeNumber(problems, '--ui-port', flags.uiPort, 1, 65535) : null;
      if (problems.length) throw new InvalidInputError(problems, 'flags');
      const state = await clusterUp({ dir: flags.dir, port, historyHosts, uiPort, log: (line) => process.stderr.write(`${line}\n`) });
      if (state.uiUrl) process.stderr.write(`Temporal UI: ${state.uiUrl}/namespaces/default/workflows\n`);
      process.stderr.write(`cluster up in ${path.resolve(flags.dir)}; \`redeliver cluster down --dir ${flags.dir}\` stops it\n`);
      process.stdout.write(`TEMPORAL_ADDRESS=${state.address}\n`);
    });
  cluster
    .command('status')
    .description('each process: its pid, its port, whether it runs (exit 3 if one does not)')
    .option('--dir <dir>', 'the cluster', DEFAULT_DIR())
    .option('--json', 'machine-readable output')
    .action((flags: { dir: string; json?: boolean }) => {
      const status = clusterStatus(flags.dir);
      emit(!!flags.json, status, () => [
        `Temporal at ${status.address}${status.uiUrl ? `, UI at ${status.uiUrl}` : ''}`,
        `${'SERVICE'.padEnd(12)}${'PID'.padEnd(9)}${'PORT'.padEnd(7)}STATE`,
        ...status.services.map(
          (s) => `${s.name.padEnd(12)}${String(s.pid).padEnd(9)}${String(s.port).padEnd(7)}${s.running ? 'running' : 'stopped'}`,
        ),
      ]);
      if (status.services.some((s) => !s.running)) process.exitCode = EXIT.failure;
    });
  cluster
    .command('down')
    .description('stop every process of it; its data stays for the next `cluster up` (remove the folder to drop it)')
    .option('--dir <dir>', 'the cluster', DEFAULT_DIR())
    .action(async (flags: { dir: string }) => {
      await clusterDown(flags.dir);
      process.stderr.write(`cluster in ${path.resolve(flags.dir)} stopped\n`);
    });
}
