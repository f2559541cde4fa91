import { readFileSync } from 'node:fs';
import type { ConfigProblem } from '../config/errors';

/**
 * Where a worker finds the secrets that deliveries name (MQTT credentials, webhook signing secrets): one
 * variable per secret, `<PREFIX><NAME>`, holding it as JSON, else an entry of the JSON file named by
 * `<PREFIX>FILE`. Both are read at every attempt, so a rotated secret needs no restart; every configured
 * secret is also checked when the worker starts. Messages name the variable (and the entry), never a secret.
 */
export interface SecretSource<T> {
  /** `REDELIVER_MQTT_CREDENTIALS_`: the variable of secret `name` is this and the name in upper case. */
  prefix: string;
  /** What a secret's JSON looks like, for the message when it is not JSON at all. */
  example: string;
  /** Checks one secret's parsed JSON; throws what is wrong, never quoting a secret. */
  check(value: unknown): T;
}

/** Turns a secret's name into the secret, or undefined when the worker knows no such name. Throws when the configuration is broken. */
export type SecretResolver<T> = (name: string) => T | undefined;

/** `<PREFIX>FILE`: a JSON file of every secret by name. */
export function secretsFileVariable(source: SecretSource<unknown>): string {
  return `${source.prefix}FILE`;
}

/** The environment variable that holds secret `name`: upper case, anything but letters and digits as `_`. */
export function secretVariable(source: SecretSource<unknown>, name: string): string {
  return source.prefix + name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** Where a worker looks for secret `name`, in words, for the reason of a refused attempt. */
export function secretSources(source: SecretSource<unknown>, name: string): string {
  return `${secretVariable(source, name)} or the file named by ${secretsFileVariable(source)}`;
}

/** The worker's resolver: the variable first, then the file; both read at each call (rotation needs no restart). */
export function secretsFromEnvironment<T>(source: SecretSource<T>, env: NodeJS.ProcessEnv = process.env): SecretResolver<T> {
  const fileVariable = secretsFileVariable(source);
  // read at every attempt rather than once in src/config (which checks them all at start): rotation needs no restart
  return (name) => {
    const variable = secretVariable(source, name);
    // a secret named "file" must not read the file's path as its JSON
    const inline = variable === fileVariable ? undefined : env[variable]?.trim();
    if (inline) return where(variable, () => parseSecret(source, inline));
    const file = env[fileVariable]?.trim();
    if (!file) return undefined;
    const entry = where(fileVariable, () => readSecretsFile(file))[name];
    return entry === undefined ? undefined : where(`${file}: "${name}"`, () => source.check(entry));
  };
}

/** Every secret the environment configures, each checked as an attempt would check it: one problem per bad variable or entry. */
export function secretProblems(source: SecretSource<unknown>, env: NodeJS.ProcessEnv): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const fileVariable = secretsFileVariable(source);
  const check = (variable: string, fn: () => unknown, prefix = '') => {
    try {
      fn();
    } catch (err) {
      problems.push({ variable, message: prefix + (err as Error).message });
    }
  };
  for (const [variable, value] of Object.entries(env)) {
    if (variable.startsWith(source.prefix) && variable !== fileVariable && value?.trim()) check(variable, () => parseSecret(source, value));
  }
  const file = env[fileVariable]?.trim();
  if (file) {
    check(fileVariable, () => {
      for (const [name, entry] of Object.entries(readSecretsFile(file)))
        check(fileVariable, () => source.check(entry), `${file}: "${name}": `);
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

function readSecretsFile(file: string): Record<string, unknown> {
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
  if (typeof all !== 'object' || all === null || Array.isArray(all)) throw new Error(`${file} must hold a JSON object of secrets by name`);
  return all as Record<string, unknown>;
}

function parseSecret<T>(source: SecretSource<T>, text: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // the message must not quote the text: it is a secret
    throw new Error(`must be JSON such as ${source.example}`);
  }
  return source.check(value);
}
