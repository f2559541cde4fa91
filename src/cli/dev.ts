import path from 'node:path';
import type { Command } from 'commander';
import { Redeliver } from '../client';
import { startDevServer } from '../dev/dev-server';
import { projectRoot } from '../dev/temporal-cli';
import { runDemo } from '../demo/demo';
import { createWorker, installRuntime } from '../worker';

interface DevFlags {
  port: string;
  uiPort: string;
  db: string;
  worker: boolean;
  demo?: boolean;
  once?: boolean;
}

export function registerDev(program: Command): void {
  program
    .command('dev')
    .description('start a local Temporal dev server with its UI, and a worker, in the foreground until Ctrl-C')
    .option('--port <port>', 'Temporal frontend port', '7233')
    .option('--ui-port <port>', 'Web UI port', '8233')
    .option('--db <file>', 'SQLite file that keeps deliveries across restarts', path.join(projectRoot(), '.temporal', 'dev.db'))
    .option('--no-worker', 'run the server alone')
    .option('--demo', 'also deliver a handful of demo messages to a flaky local endpoint')
    .option('--once', 'with --demo: stop when every demo delivery has ended')
    .addHelpText('after', '\nExamples:\n  $ redeliver dev --demo\n  $ redeliver dev --port 7300 --ui-port 8300 --db /tmp/redeliver.db --no-worker')
    .action(async (flags: DevFlags) => {
      const port = portNumber('--port', flags.port);
      const uiPort = portNumber('--ui-port', flags.uiPort);
      const say = (line: string) => process.stdout.write(`${line}\n`);
      const server = await startDevServer({
        port,
        uiPort,
        dbFile: flags.db,
        logFile: path.join(path.dirname(path.resolve(flags.db)), 'dev-server.log'),
        log: say,
      });
      const ui = `http://localhost:${uiPort}/namespaces/default/workflows`;
      say(`Temporal dev server at ${server.address} (state in ${flags.db})`);
      say(`Temporal UI: ${ui}`);
      try {
        if (!flags.worker) {
          say('no worker (--no-worker); Ctrl-C stops the server');
          await new Promise<void>((resolve) => {
            process.once('SIGINT', resolve);
            process.once('SIGTERM', resolve);
          });
          return;
        }
        installRuntime();
        const worker = await createWorker({ address: server.address });
        say(`worker polling task queue "${worker.options.taskQueue}"`);
        const running = worker.run();
        if (flags.demo) {
          const redeliver = await Redeliver.connect({ address: server.address, taskQueue: worker.options.taskQueue });
          try {
            await runDemo(redeliver, say);
          } finally {
            await redeliver.close();
          }
          say(`\nEvery demo delivery has ended. See them in the UI: ${ui}`);
          if (flags.once) worker.shutdown();
          else say('Ctrl-C stops the worker and the server.');
        } else {
          say('Ctrl-C stops the worker and the server.');
        }
        await running;
      } finally {
        await server.stop();
      }
    });
}

function portNumber(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${flag} must be a port number 1-65535, got ${JSON.stringify(value)}`);
  return n;
}
