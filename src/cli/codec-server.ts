import type { Command } from 'commander';
import { ConfigError, EnvReader } from '../config/errors';
import { AesGcmPayloadCodec } from '../encryption/codec';
import { startCodecServer } from '../encryption/codec-server';
import { readKeyRing } from '../encryption/keys';

interface CodecServerFlags {
  host: string;
  port: string;
  corsOrigin?: string[];
}

export function registerCodecServer(program: Command): void {
  program
    .command('codec-server')
    .description("serve Temporal's /encode and /decode with the payload encryption keys, so that the Temporal UI shows operators decrypted payloads")
    .option('--host <ip>', 'interface to listen on (0.0.0.0 inside a container)', '127.0.0.1')
    .option('--port <port>', 'port to listen on', '8888')
    .option('--cors-origin <url...>', "the Temporal UI's origin, allowed to call from operators' browsers (default $REDELIVER_CODEC_CORS_ORIGINS)")
    .addHelpText(
      'after',
      '\nReads REDELIVER_ENCRYPTION_KEYS (or _FILE); REDELIVER_CODEC_AUTHORIZATION, when set, is the Authorization header every request must carry.\n' +
        'Example:\n  $ REDELIVER_ENCRYPTION_KEYS=k1:... redeliver codec-server --cors-origin http://localhost:8080\n' +
        '  then in the UI: Settings → Codec Server → http://localhost:8888 (or temporal server start-dev --ui-codec-endpoint http://localhost:8888)',
    )
    .action(async (flags: CodecServerFlags) => {
      const reader = new EnvReader();
      const keys = readKeyRing(reader);
      const authorization = reader.string('REDELIVER_CODEC_AUTHORIZATION');
      const origins = flags.corsOrigin ?? (reader.string('REDELIVER_CODEC_CORS_ORIGINS') ?? '').split(/[\s,]+/).filter(Boolean);
      if (!keys && !reader.problems.length) reader.problem('REDELIVER_ENCRYPTION_KEYS', 'is not set: the codec server needs the keys the workers encrypt with');
      reader.done();
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError([{ variable: '--port', message: `must be a port number, got ${JSON.stringify(flags.port)}` }]);
      const server = await startCodecServer({
        codec: new AesGcmPayloadCodec(keys!),
        host: flags.host,
        port,
        corsOrigins: origins,
        ...(authorization && { authorization }),
      });
      process.stderr.write(
        `codec server at http://${flags.host}:${port} (keys: ${[...keys!.byId.keys()].join(', ')}; CORS: ${origins.join(', ') || 'none'}; ` +
          `authorization ${authorization ? 'required' : 'not checked'}); Ctrl-C stops it\n`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
    });
}
