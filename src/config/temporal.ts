import { accessSync, constants } from 'node:fs';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { EnvReader, type Environment } from './errors';

/** How to reach Temporal: what `NativeConnection.connect` (worker) and `Connection.connect` (client) take. */
export interface TemporalConnectionConfig {
  connectionOptions: Pick<NativeConnectionOptions, 'address' | 'tls' | 'apiKey' | 'metadata'> & { address: string };
  namespace: string;
}

export const DEFAULT_ADDRESS = 'localhost:7233';
export const DEFAULT_NAMESPACE = 'default';

/** PEM material comes as a file (`_PATH`) or inline (`_DATA`), never both. */
const PEM_PAIRS = ['TEMPORAL_TLS_CLIENT_CERT', 'TEMPORAL_TLS_CLIENT_KEY', 'TEMPORAL_TLS_SERVER_CA_CERT'] as const;

/**
 * The connection to Temporal, by Temporal's own conventions (`@temporalio/envconfig`, as the Temporal CLI
 * and every SDK read them): `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`,
 * `TEMPORAL_GRPC_META_*`, and a profile from `TEMPORAL_CONFIG_FILE` (default
 * ~/.config/temporalio/temporal.toml) chosen by `TEMPORAL_PROFILE`; environment variables win over the
 * file. Problems are added to `reader`, each naming its variable; the caller throws them all at once.
 */
export function readTemporalConnection(reader: EnvReader): TemporalConnectionConfig {
  const env = reader.env;
  const before = reader.problems.length;
  reader.hostPort('TEMPORAL_ADDRESS', 'temporal:7233 or <namespace>.<account>.tmprl.cloud:7233');
  const namespace = reader.string('TEMPORAL_NAMESPACE');
  if (namespace !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(namespace)) {
    reader.problem('TEMPORAL_NAMESPACE', `must be a namespace name (letters, digits, '.', '_', '-'), got ${JSON.stringify(namespace)}`);
  }
  const tls = reader.boolean('TEMPORAL_TLS');
  const apiKey = reader.string('TEMPORAL_API_KEY');
  if (apiKey !== undefined && /\s/.test(apiKey))
    reader.problem('TEMPORAL_API_KEY', 'must not contain whitespace (was a line break copied with it?)');
  if (apiKey !== undefined && tls === false)
    reader.problem('TEMPORAL_TLS', 'is false, but TEMPORAL_API_KEY is set: API keys are only sent over TLS');
  for (const base of PEM_PAIRS) {
    const file = reader.string(`${base}_PATH`);
    if (file !== undefined && reader.string(`${base}_DATA`) !== undefined)
      reader.problem(`${base}_PATH`, `and ${base}_DATA are both set; give one`);
    if (file !== undefined) {
      try {
        accessSync(file, constants.R_OK);
      } catch {
        reader.problem(`${base}_PATH`, `cannot read ${JSON.stringify(file)}`);
      }
    }
  }
  const cert = reader.string('TEMPORAL_TLS_CLIENT_CERT_PATH') ?? reader.string('TEMPORAL_TLS_CLIENT_CERT_DATA');
  const key = reader.string('TEMPORAL_TLS_CLIENT_KEY_PATH') ?? reader.string('TEMPORAL_TLS_CLIENT_KEY_DATA');
  if ((cert === undefined) !== (key === undefined)) {
    reader.problem(
      cert === undefined ? 'TEMPORAL_TLS_CLIENT_CERT_PATH' : 'TEMPORAL_TLS_CLIENT_KEY_PATH',
      'mTLS needs both the client certificate and its key (…_PATH or …_DATA)',
    );
  }
  if (reader.boolean('TEMPORAL_TLS_DISABLE_HOST_VERIFICATION')) {
    reader.problem(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      'is not supported by the TypeScript SDK; set TEMPORAL_TLS_SERVER_NAME to the name on the server certificate instead',
    );
  }

  let loaded: ReturnType<typeof loadClientConnectConfig> | undefined;
  try {
    // envconfig repeats some of the checks above in its own words: ask it only when they passed
    if (reader.problems.length === before) loaded = loadClientConnectConfig({ overrideEnvVars: definedOnly(env) });
  } catch (err) {
    reader.problem(
      env.TEMPORAL_PROFILE ? 'TEMPORAL_PROFILE' : 'TEMPORAL_CONFIG_FILE',
      `could not load Temporal's client configuration: ${(err as Error).message}`,
    );
  }
  const options = loaded?.connectionOptions ?? {};
  return {
    connectionOptions: {
      address: options.address || DEFAULT_ADDRESS,
      ...(options.tls !== undefined && { tls: options.tls }),
      ...(options.apiKey !== undefined && { apiKey: options.apiKey }),
      ...(options.metadata !== undefined && { metadata: options.metadata }),
    },
    namespace: loaded?.namespace || DEFAULT_NAMESPACE,
  };
}

/** The connection from the environment; throws a ConfigError naming every bad variable. */
export function temporalConnectionFromEnv(env: Environment = process.env): TemporalConnectionConfig {
  const reader = new EnvReader(env);
  const config = readTemporalConnection(reader);
  reader.done();
  return config;
}

/** envconfig wants string values only; empty ones count as unset, as everywhere in redeliver. */
function definedOnly(env: Environment): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env)
      .filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].trim() !== '')
      .map(([k, v]) => [k, v.trim()]),
  );
}
