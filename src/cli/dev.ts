import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Command } from 'commander';
import { Redeliver } from '../client/index';
import { startDevServer } from '../dev/dev-server';
import { projectRoot } from '../dev/temporal-cli';
import { runDemo } from '../demo/demo';
import { workerSettingsFromEnv } from '../config/settings';
import { AesGcmPayloadCodec } from '../encryption/codec';
import { startCodecServer, type CodecServer } from '../encryption/codec-server';
import type { KeyRing } from '../encryption/keys';
import { createWorker, installRuntime, runWorker } from '../worker';
import { wholeNumberFlag } from './number-flags';

interface DevFlags {
  port: string;
  uiPort: string;
  db: string;
  worker: boolean;
  demo?: boolean;
  once?: boolean;
  codecPort?: string;
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
    .option(
      '--codec-port <port>',
      'with REDELIVER_ENCRYPTION_KEYS set: port of the codec server the UI decrypts payloads with (default UI port + 1)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  $ redeliver dev --demo\n  $ redeliver dev --port 7300 --ui-port 8300 --db /tmp/redeliver.db --no-worker',
    )
    .action(async (flags: DevFlags) => {
      const port = portNumber('--port', flags.port);
      const uiPort = portNumber('--ui-port', flags.uiPort);
      const say = (line: string) => process.stdout.write(`${line}\n`);
      const settings = workerSettingsFromEnv();
      // with encryption on, the UI decrypts through a codec server of the same keys
      const codec = settings.encryptionKeys ? await startDevCodecServer(settings.encryptionKeys, uiPort, flags.codecPort) : undefined;
      if (codec) {
        say(
          `payloads encrypted with key ${settings.encryptionKeys!.current.id}; the UI decrypts them through the codec server at ${codec.server.url}`,
        );
      }
      const server = await startDevServer({
        port,
        uiPort,
        dbFile: flags.db,
        logFile: path.join(path.dirname(path.resolve(flags.db)), 'dev-server.log'),
        log: say,
        ...(codec && { uiCodecEndpoint: codec.uiEndpoint }),
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
        installRuntime(settings);
        // the demo endpoint and anything you try locally live on loopback, which the SSRF guard refuses by default
        const allowAddresses = ['loopback', ...settings.allowAddresses.entries];
        const worker = await createWorker({ settings, address: server.address, allowAddresses });
        say(`worker polling task queue "${worker.options.taskQueue}" (SSRF guard: loopback allowed for local endpoints)`);
        const running = runWorker(worker);
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
        await codec?.server.close();
      }
    });
}

/**
 * The codec server for the dev UI, on loopback, with a token made for this run: the UI has no sign-on to
 * forward, so the token goes in the codec endpoint's path, which the dev server hands to the UI. Other
 * pages of the browser, and anything else on the machine that does not read the UI's settings, lack it.
 */
async function startDevCodecServer(
  keys: KeyRing,
  uiPort: number,
  codecPort?: string,
): Promise<{ server: CodecServer; uiEndpoint: string }> {
  const token = randomBytes(24).toString('base64url');
  const server = await startCodecServer({
    codec: new AesGcmPayloadCodec(keys),
    port: codecPort === undefined ? uiPort + 1 : portNumber('--codec-port', codecPort),
    token,
    corsOrigins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
  });
  return { server, uiEndpoint: `http://localhost:${new URL(server.url).port}/${token}` };
}

function portNumber(flag: string, value: string): number {
  return wholeNumberFlag(flag, value, 1, 65535);
}
