import type { Command } from 'commander';
import { codecServerSettingsFromEnv, type CodecServerFlags } from '../config/codec-server';
import { ConfigError } from '../config/errors';
import { AesGcmPayloadCodec } from '../encryption/codec';
import { startCodecServer } from '../encryption/codec-server';

interface Flags extends CodecServerFlags {
  host: string;
  port: string;
}

export function registerCodecServer(program: Command): void {
  program
    .command('codec-server')
    .description(
      "serve Temporal's /encode and /decode with the payload encryption keys, so that the Temporal UI shows operators decrypted payloads",
    )
    .option('--host <ip>', 'interface to listen on (0.0.0.0 inside a container)', '127.0.0.1')
    .option('--port <port>', 'port to listen on', '8888')
    .option(
      '--token <token>',
      'the secret every caller must send (default $REDELIVER_CODEC_TOKEN; prefer it: a command line is visible to other users)',
    )
    .option(
      '--cors-origin <url...>',
      "the Temporal UI's origin, allowed to call from operators' browsers (default $REDELIVER_CODEC_CORS_ORIGINS)",
    )
    .option(
      '--allowed-host <name...>',
      "names it is reached by besides localhost and loopback, a proxy's (default $REDELIVER_CODEC_ALLOWED_HOSTS)",
    )
    .addHelpText(
      'after',
      '\nReads REDELIVER_ENCRYPTION_KEYS (or _FILE) and REDELIVER_CODEC_TOKEN. A request must carry the token, as\n' +
        '`Authorization: Bearer <token>` or as the first path segment (/<token>/decode), be addressed to one of the\n' +
        "server's names, and come from an allowed origin if it comes from a browser.\n" +
        'Example:\n  $ export REDELIVER_ENCRYPTION_KEYS=k1:... REDELIVER_CODEC_TOKEN=$(openssl rand -hex 32)\n' +
        '  $ redeliver codec-server --cors-origin http://localhost:8080\n' +
        "  then the UI's codec endpoint: http://localhost:8888/<token> (TEMPORAL_CODEC_ENDPOINT, or Settings → Codec Server);\n" +
        '  the Temporal CLI: --codec-endpoint http://localhost:8888 --codec-auth "Bearer <token>"',
    )
    .action(async (flags: Flags) => {
      const settings = codecServerSettingsFromEnv(process.env, flags);
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new ConfigError([{ variable: '--port', message: `must be a port number, got ${JSON.stringify(flags.port)}` }]);
      const server = await startCodecServer({
        codec: new AesGcmPayloadCodec(settings.encryptionKeys),
        host: flags.host,
        port,
        token: settings.token,
        corsOrigins: settings.corsOrigins,
        allowedHosts: settings.allowedHosts,
      });
      const bound = new URL(server.url).port;
      process.stderr.write(
        `codec server at http://${flags.host}:${bound} (keys: ${[...settings.encryptionKeys.byId.keys()].join(', ')}; ` +
          `CORS: ${settings.corsOrigins.join(', ') || 'none'}; names: ${['localhost', 'loopback', ...settings.allowedHosts].join(', ')}); ` +
          `the UI's codec endpoint is http://localhost:${bound}/<REDELIVER_CODEC_TOKEN>; Ctrl-C stops it\n`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
    });
}
