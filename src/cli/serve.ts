import type { Command } from 'commander';
import { startApiServer } from '../api/server';
import { apiSettingsFromEnv, DEFAULT_API_PORT, type ApiFlags } from '../config/api';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';

/** Calls to Temporal while it is away fail after this many tries (a second or so), and the API answers 503. */
const TRIES_WHILE_AWAY = 3;

export function registerServe(program: Command): void {
  withConnectionFlags(
    program
      .command('serve')
      .description('the HTTP API: submit and operate deliveries with API keys (docs/http-api.md)')
      .option('--port <port>', `port to listen on (default ${DEFAULT_API_PORT}; 0 picks a free one)`)
      .option('--host <ip>', 'interface to listen on (0.0.0.0 inside a container)', '127.0.0.1'),
  )
    .addHelpText(
      'after',
      '\nReads REDELIVER_API_KEYS_FILE (or REDELIVER_API_KEYS): a JSON array of\n' +
        '  {"key": "<secret>" | "sha256": "<hex>", "tenants": ["acme"], "roles": ["produce", "operate", "read"]}\n' +
        'and REDELIVER_API_RATE_LIMIT, REDELIVER_API_BODY_LIMIT, REDELIVER_API_TLS_CERT_FILE / _KEY_FILE,\n' +
        'REDELIVER_API_REQUEST_TIMEOUT (30s), REDELIVER_API_CONNECTION_TIMEOUT (6m), REDELIVER_API_KEEP_ALIVE_TIMEOUT (72s),\n' +
        'REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS (100, or off) (docs/deploying.md).\n' +
        'Example:\n  $ REDELIVER_API_KEYS_FILE=keys.json redeliver serve --port 8090\n' +
        '  $ curl -H "Authorization: Bearer $KEY" http://127.0.0.1:8090/v1/deliveries/delivery%2Facme%2Fsensor-1%2Fmsg-42',
    )
    .action(async (flags: ConnectionFlags & ApiFlags) => {
      const settings = apiSettingsFromEnv(process.env, flags);
      // lazily: the API starts, and answers 503, while Temporal is away
      const redeliver = await connect(flags, { lazy: { attempts: TRIES_WHILE_AWAY } });
      const server = await startApiServer({ settings, redeliver });
      process.stderr.write(
        `redeliver API at ${server.url} (${settings.keys.length} key(s); OpenAPI at ${server.url}/openapi.json); SIGTERM or Ctrl-C stops it\n`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      process.stderr.write('stopping: no new requests; finishing those in flight\n');
      await server.close();
      await redeliver.close();
    });
}
