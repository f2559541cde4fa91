import { readFileSync } from 'node:fs';

/** What a worker logs in to a broker with. Resolved by name on the worker: never part of a delivery. */
export interface MqttCredential {
  username?: string;
  password?: string;
}

/**
 * Turns a credential name into the credential, or undefined when the worker knows no such name.
 * Throws (with a message that names where it looked, never the secret) when the configuration is broken.
 */
export type CredentialResolver = (name: string) => MqttCredential | undefined;

/** `REDELIVER_MQTT_CREDENTIALS_<NAME>`: the credential as JSON, `{"username": "…", "password": "…"}`. */
export const CREDENTIAL_ENV_PREFIX = 'REDELIVER_MQTT_CREDENTIALS_';
/** A JSON file of every credential by name: `{ "<name>": { "username": "…", "password": "…" } }`. */
export const CREDENTIALS_FILE_ENV = 'REDELIVER_MQTT_CREDENTIALS_FILE';

/** The environment variable that holds credential `name`: upper case, anything but letters and digits as `_`. */
export function credentialEnvName(name: string): string {
  return CREDENTIAL_ENV_PREFIX + name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/**
 * The worker's resolver: `REDELIVER_MQTT_CREDENTIALS_<NAME>` first, then the file named by
 * `REDELIVER_MQTT_CREDENTIALS_FILE`. Both are read at connect time, so a rotated secret is picked up by
 * the next connection without a restart.
 */
export function credentialsFromEnvironment(env: NodeJS.ProcessEnv = process.env): CredentialResolver {
  return (name) => {
    const variable = credentialEnvName(name);
    const inline = env[variable];
    if (inline !== undefined && inline !== '') return parseCredential(inline, variable);
    const file = env[CREDENTIALS_FILE_ENV];
    if (file === undefined || file === '') return undefined;
    let all: unknown;
    try {
      all = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`${CREDENTIALS_FILE_ENV} (${file}) cannot be read as JSON: ${(err as Error).message}`);
    }
    if (typeof all !== 'object' || all === null || Array.isArray(all)) throw new Error(`${CREDENTIALS_FILE_ENV} (${file}) must hold a JSON object of credentials by name`);
    const entry = (all as Record<string, unknown>)[name];
    return entry === undefined ? undefined : checked(entry, `${file}: "${name}"`);
  };
}

/** Where a worker looks for credential `name`, in words, for the reason of a refused attempt. */
export function credentialSources(name: string): string {
  return `${credentialEnvName(name)} or the file named by ${CREDENTIALS_FILE_ENV}`;
}

function parseCredential(text: string, where: string): MqttCredential {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // the message must not quote the text: it is a secret
    throw new Error(`${where} must be JSON such as {"username": "…", "password": "…"}`);
  }
  return checked(value, where);
}

function checked(value: unknown, where: string): MqttCredential {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where} must be an object { username?, password? }`);
  const { username, password, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw new Error(`${where} has unknown fields: ${Object.keys(rest).join(', ')} (known: username, password)`);
  if (username !== undefined && typeof username !== 'string') throw new Error(`${where}: username must be a string`);
  if (password !== undefined && typeof password !== 'string') throw new Error(`${where}: password must be a string`);
  return { ...(username !== undefined && { username }), ...(password !== undefined && { password }) };
}
