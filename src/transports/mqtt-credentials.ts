import { readFileSync } from 'node:fs';
import type { ConfigProblem } from '../config/errors';
import { parseBinding, type SecretKind } from './secret-binding';

/** What a worker logs in to a broker with. Resolved by name on the worker: never part of a delivery. */
export interface MqttCredential {
  username?: string;
  password?: string;
  /**
   * The brokers it may be sent to, `mqtt(s)://host[:port]` or `{ url, ca?, caFile?, servername? }`:
   * required, and checked before every connection (transports/secret-binding.ts), so a producer cannot
   * name the credential with a broker of its own.
   */
  brokers: readonly (string | MqttBrokerBinding)[];
}

/**
 * An mqtts broker a credential is bound to, with the TLS trust for it: the operator's, since the delivery
 * naming the credential may not set any (a producer's CA and server name would choose who gets it).
 */
export interface MqttBrokerBinding {
  /** `mqtts://host[:port]`. */
  url: string;
  /** The CA certificates (PEM) that sign the broker's: they replace the system's roots for it. */
  ca?: string;
  /** A file holding them, read at each connect (so a rotated CA needs no restart); not with `ca`. */
  caFile?: string;
  /** The name the broker's certificate must carry, when not the URL's host (a broker reached by IP address). */
  servername?: string;
}

/**
 * Turns a credential name into the credential, or undefined when the worker knows no such name.
 * Throws (with a message that names where it looked, never the secret) when the configuration is broken.
 */
export type CredentialResolver = (name: string) => MqttCredential | undefined;

/** `REDELIVER_MQTT_CREDENTIALS_<NAME>`: the credential as JSON, `{"username": "…", "password": "…", "brokers": […]}`. */
export const CREDENTIAL_ENV_PREFIX = 'REDELIVER_MQTT_CREDENTIALS_';
/** A JSON file of every credential by name: `{ "<name>": { "username": "…", "password": "…", "brokers": […] } }`. */
export const CREDENTIALS_FILE_ENV = 'REDELIVER_MQTT_CREDENTIALS_FILE';

/** The environment variable that holds credential `name`: upper case, anything but letters and digits as `_`. */
export function credentialEnvName(name: string): string {
  return CREDENTIAL_ENV_PREFIX + name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** Where a worker looks for credential `name`, in words, for the reason of a refused attempt. */
export function credentialSources(name: string): string {
  return `${credentialEnvName(name)} or the file named by ${CREDENTIALS_FILE_ENV}`;
}

/** The TLS trust for a bound mqtts broker, as a connection uses it (read from a MqttBrokerBinding). */
export interface BrokerTls {
  ca?: string;
  servername?: string;
}

/** MQTT credentials as secrets bound to brokers: what the connection's gate (releaseSecret) checks. */
export const MQTT_CREDENTIAL: SecretKind<MqttCredential, BrokerTls> = {
  label: 'MQTT credential',
  field: 'brokers',
  ports: { mqtt: 1883, mqtts: 8883 },
  example: 'mqtts://hub.example.com:8883',
  targetsOf: (credential) => credential.brokers,
  sources: credentialSources,
  options: { fields: ['ca', 'caFile', 'servername'], read: brokerTls },
};

const PEM_CERTIFICATE = '-----BEGIN CERTIFICATE-----';
const HOST_NAME = /^[A-Za-z0-9._-]{1,253}$/;

/** A binding entry's TLS trust; throws naming the bad field. `caFile` is read here: at start, and at each connect. */
function brokerTls(entry: Readonly<Record<string, unknown>>, origin: string): BrokerTls {
  const { ca, caFile, servername } = entry;
  if (!origin.startsWith('mqtts:') && (ca !== undefined || caFile !== undefined || servername !== undefined)) {
    throw new Error('ca, caFile and servername apply to mqtts:// brokers only');
  }
  if (ca !== undefined && caFile !== undefined) throw new Error('give ca or caFile, not both');
  if (servername !== undefined && (typeof servername !== 'string' || !HOST_NAME.test(servername))) {
    throw new Error('servername must be a host name: letters, digits, ".", "-" or "_", at most 253');
  }
  const pem = caFile === undefined ? ca : readCaFile(caFile);
  if (pem !== undefined && (typeof pem !== 'string' || !pem.includes(PEM_CERTIFICATE))) {
    throw new Error(`${caFile === undefined ? 'ca' : `caFile ${JSON.stringify(caFile)}`} must hold PEM certificates (${PEM_CERTIFICATE})`);
  }
  return { ...(pem !== undefined && { ca: pem }), ...(servername !== undefined && { servername }) };
}

function readCaFile(file: unknown): string {
  if (typeof file !== 'string' || file === '') throw new Error('caFile must be the path of a PEM file');
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`caFile ${JSON.stringify(file)} cannot be read: ${(err as Error).message}`);
  }
}

/**
 * The worker's resolver: `REDELIVER_MQTT_CREDENTIALS_<NAME>` first, then the file named by
 * `REDELIVER_MQTT_CREDENTIALS_FILE`. Both are read at every attempt (transports/mqtt.ts, accessFor), so a
 * rotated secret, binding or CA applies without a restart.
 */
export function credentialsFromEnvironment(env: NodeJS.ProcessEnv = process.env): CredentialResolver {
  // read at every connect rather than once in src/config (which checks them all at start): rotation needs no restart
  return (name) => {
    const variable = credentialEnvName(name);
    // a credential named "file" must not read the file's path as its JSON
    const inline = variable === CREDENTIALS_FILE_ENV ? undefined : env[variable]?.trim();
    if (inline) return where(variable, () => parseCredential(inline));
    const file = env[CREDENTIALS_FILE_ENV]?.trim();
    if (!file) return undefined;
    const entry = where(CREDENTIALS_FILE_ENV, () => readCredentialsFile(file))[name];
    return entry === undefined ? undefined : where(`${file}: "${name}"`, () => checked(entry));
  };
}

/**
 * Every credential the environment configures, each checked as a connection would check it, so that a
 * worker refuses to start with one it could never use: each problem names its variable (and, for the
 * file, the entry). Secrets are never quoted.
 */
export function credentialProblems(env: NodeJS.ProcessEnv): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const check = (variable: string, fn: () => unknown, prefix = '') => {
    try {
      fn();
    } catch (err) {
      problems.push({ variable, message: prefix + (err as Error).message });
    }
  };
  for (const [variable, value] of Object.entries(env)) {
    if (variable.startsWith(CREDENTIAL_ENV_PREFIX) && variable !== CREDENTIALS_FILE_ENV && value?.trim())
      check(variable, () => parseCredential(value));
  }
  const file = env[CREDENTIALS_FILE_ENV]?.trim();
  if (file) {
    check(CREDENTIALS_FILE_ENV, () => {
      for (const [name, entry] of Object.entries(readCredentialsFile(file)))
        check(CREDENTIALS_FILE_ENV, () => checked(entry), `${file}: "${name}": `);
    });
  }
  return problems;
}

/** Runs `fn`, putting `place: ` before the message of what it throws. */
function where<T>(place: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new Error(`${place}: ${(err as Error).message}`);
  }
}

function readCredentialsFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file} cannot be read as JSON: ${(err as Error).message}`);
  }
  let all: unknown;
  try {
    all = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text: it holds secrets
    throw new Error(`${file} is not valid JSON`);
  }
  if (typeof all !== 'object' || all === null || Array.isArray(all))
    throw new Error(`${file} must hold a JSON object of credentials by name`);
  return all as Record<string, unknown>;
}

function parseCredential(text: string): MqttCredential {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // the message must not quote the text: it is a secret
    throw new Error('must be JSON such as {"username": "…", "password": "…", "brokers": ["mqtts://host:8883"]}');
  }
  return checked(value);
}

function checked(value: unknown): MqttCredential {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('must be an object { username?, password?, brokers }');
  const { username, password, brokers, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    throw new Error(`has unknown fields: ${Object.keys(rest).join(', ')} (known: username, password, brokers)`);
  if (username !== undefined && typeof username !== 'string') throw new Error('username must be a string');
  if (password !== undefined && typeof password !== 'string') throw new Error('password must be a string');
  parseBinding(brokers, MQTT_CREDENTIAL);
  return {
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
    brokers: brokers as MqttCredential['brokers'],
  };
}
