import { readFileSync } from 'node:fs';
import type { ConfigProblem } from '../config/errors';
import {
  secretProblems,
  secretsFileVariable,
  secretSources,
  secretsFromEnvironment,
  secretVariable,
  type SecretSource,
} from './named-secrets';
import { parseBinding, parseTenants, type SecretKind } from './secret-binding';

/** What a worker logs in to a broker with. Resolved by name on the worker: never part of a delivery. */
export interface MqttCredential {
  username?: string;
  password?: string;
  /**
   * The brokers it may be sent to, `mqtt(s)://host[:port]` or `{ url, ca?, caFile?, servername? }`:
   * required, and checked before every connection (releaseSecret), so a producer cannot
   * name the credential with a broker of its own.
   */
  brokers: readonly (string | MqttBrokerBinding)[];
  /**
   * The tenants whose deliveries and subscriptions may use it (`["acme"]`, or `["*"]` for all): required,
   * and checked at submit where the submitter can see it and before every connection, so that one tenant
   * cannot publish or subscribe with another's login. The bridge's own login is the operator's: `"redeliver"`.
   */
  tenants: readonly string[];
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

/** `REDELIVER_MQTT_CREDENTIALS_<NAME>`: the credential as JSON, `{"username": "…", "password": "…", "brokers": […], "tenants": […]}`. */
export const CREDENTIAL_ENV_PREFIX = 'REDELIVER_MQTT_CREDENTIALS_';

/** Where a worker finds MQTT credentials: `REDELIVER_MQTT_CREDENTIALS_<NAME>`, else `REDELIVER_MQTT_CREDENTIALS_FILE` (a SecretSource). */
const CREDENTIAL_SOURCE: SecretSource<MqttCredential> = {
  prefix: CREDENTIAL_ENV_PREFIX,
  example: '{"username": "…", "password": "…", "brokers": ["mqtts://host:8883"], "tenants": ["acme"]}',
  check: checked,
};

/** A JSON file of every credential by name: `{ "<name>": { "username": "…", "password": "…", "brokers": […], "tenants": […] } }`. */
export const CREDENTIALS_FILE_ENV = secretsFileVariable(CREDENTIAL_SOURCE);

/** The environment variable that holds credential `name`: upper case, anything but letters and digits as `_`. */
export function credentialEnvName(name: string): string {
  return secretVariable(CREDENTIAL_SOURCE, name);
}

/** Where a worker looks for credential `name`, in words, for the reason of a refused attempt. */
export function credentialSources(name: string): string {
  return secretSources(CREDENTIAL_SOURCE, name);
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
  tenantsOf: (credential) => credential.tenants,
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
 * `REDELIVER_MQTT_CREDENTIALS_FILE`. Both are read at every attempt (accessFor), so a
 * rotated secret, binding or CA applies without a restart.
 */
export function credentialsFromEnvironment(env: NodeJS.ProcessEnv = process.env): CredentialResolver {
  return secretsFromEnvironment(CREDENTIAL_SOURCE, env);
}

/**
 * Every credential the environment configures, each checked as a connection would check it, so that a
 * worker refuses to start with one it could never use: each problem names its variable (and, for the
 * file, the entry). Secrets are never quoted.
 */
export function credentialProblems(env: NodeJS.ProcessEnv): ConfigProblem[] {
  return secretProblems(CREDENTIAL_SOURCE, env);
}

function checked(value: unknown): MqttCredential {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('must be an object { username?, password?, brokers, tenants }');
  const { username, password, brokers, tenants, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    throw new Error(`has unknown fields: ${Object.keys(rest).join(', ')} (known: username, password, brokers, tenants)`);
  if (username !== undefined && typeof username !== 'string') throw new Error('username must be a string');
  if (password !== undefined && typeof password !== 'string') throw new Error('password must be a string');
  parseBinding(brokers, MQTT_CREDENTIAL);
  parseTenants(tenants, MQTT_CREDENTIAL);
  return {
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
    brokers: brokers as MqttCredential['brokers'],
    tenants: tenants as string[],
  };
}
