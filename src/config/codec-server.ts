import { CODEC_TOKEN, CODEC_TOKEN_RULE } from '../encryption/codec-server';
import { readKeyRing, type KeyRing } from '../encryption/keys';
import { EnvReader, type Environment } from './errors';

/** What `redeliver codec-server` takes from the environment, or from its flags, which win. */
export interface CodecServerSettings {
  encryptionKeys: KeyRing;
  /** The secret every /encode and /decode request must carry (startCodecServer). */
  token: string;
  /** Origins of the Temporal UI allowed to call from operators' browsers. */
  corsOrigins: string[];
  /** Names the server is reached by besides localhost and loopback (a proxy's, a container's). */
  allowedHosts: string[];
}

export interface CodecServerFlags {
  token?: string;
  corsOrigin?: string[];
  allowedHost?: string[];
}

const HOST_NAME = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)$/;

/** The codec server's settings; throws a ConfigError naming every bad variable or flag, all at once. */
export function codecServerSettingsFromEnv(env: Environment = process.env, flags: CodecServerFlags = {}): CodecServerSettings {
  const reader = new EnvReader(env);
  const encryptionKeys = readKeyRing(reader);
  if (!encryptionKeys && !reader.problems.length) {
    reader.problem('REDELIVER_ENCRYPTION_KEYS', 'is not set: the codec server needs the keys the workers encrypt with');
  }
  const token = readToken(reader, flags.token);
  const originsFrom = flags.corsOrigin ? '--cors-origin' : 'REDELIVER_CODEC_CORS_ORIGINS';
  const corsOrigins = listOf(reader, 'REDELIVER_CODEC_CORS_ORIGINS', flags.corsOrigin);
  for (const origin of corsOrigins.filter((o) => !isOrigin(o))) {
    reader.problem(originsFrom, `${JSON.stringify(origin)} is not an origin: the UI's scheme, host and port, e.g. http://localhost:8080`);
  }
  const hostsFrom = flags.allowedHost ? '--allowed-host' : 'REDELIVER_CODEC_ALLOWED_HOSTS';
  const allowedHosts = listOf(reader, 'REDELIVER_CODEC_ALLOWED_HOSTS', flags.allowedHost);
  for (const host of allowedHosts.filter((h) => !HOST_NAME.test(h))) {
    reader.problem(hostsFrom, `${JSON.stringify(host)} is not a host name (no scheme, port or path: codec.example.com)`);
  }
  reader.done();
  return { encryptionKeys: encryptionKeys!, token: token!, corsOrigins, allowedHosts };
}

function readToken(reader: EnvReader, flag: string | undefined): string | undefined {
  const [name, token] = flag !== undefined ? ['--token', flag] : ['REDELIVER_CODEC_TOKEN', reader.string('REDELIVER_CODEC_TOKEN')];
  const rule = CODEC_TOKEN_RULE.replace(/^must be/, 'give');
  if (token === undefined) return reader.problem(name, `is not set: the codec server's callers must prove they hold this secret; ${rule}`);
  if (!CODEC_TOKEN.test(token)) return reader.problem(name, CODEC_TOKEN_RULE);
  return token;
}

/** A comma- or space-separated variable, unless the flag gave the list. */
function listOf(reader: EnvReader, variable: string, given: string[] | undefined): string[] {
  return given ?? (reader.string(variable) ?? '').split(/[\s,]+/).filter(Boolean);
}

/** `http://localhost:8080`: a scheme, a host and a port, as browsers send it in `Origin` (no `*`, no path). */
function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value.replace(/\/$/, '');
  } catch {
    return false;
  }
}
