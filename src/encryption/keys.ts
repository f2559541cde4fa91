import { readFileSync } from 'node:fs';
import type { EnvReader } from '../config/errors';

/** One AES-256 key and the id that payloads encrypted with it carry in their metadata. */
export interface EncryptionKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** The keys a process knows: `current` encrypts; every key decrypts what was encrypted with it. */
export interface KeyRing {
  current: EncryptionKey;
  byId: ReadonlyMap<string, EncryptionKey>;
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * Parses `id1:base64key,id2:base64key` (commas or whitespace between entries): 32-byte keys in base64 or
 * base64url, the first the current one. Rotation: put the new key first and keep the old ones after it
 * for as long as histories encrypted with them are read. Throws an error naming `source`; never a key.
 */
export function parseKeyRing(spec: string, source = 'keys'): KeyRing {
  const entries = spec.split(/[\s,]+/).filter(Boolean);
  const problems: string[] = [];
  const keys: EncryptionKey[] = [];
  entries.forEach((entry, i) => {
    const at = entry.indexOf(':');
    const id = at < 0 ? '' : entry.slice(0, at);
    const material = at < 0 ? entry : entry.slice(at + 1);
    const which = `entry ${i + 1}${KEY_ID.test(id) ? ` (${id})` : ''}`;
    if (at < 0) return problems.push(`${which} must be <key id>:<base64 key>`);
    if (!KEY_ID.test(id)) return problems.push(`${which}: the key id must be 1-64 letters, digits, '.', '_' or '-'`);
    if (keys.some((k) => k.id === id)) return problems.push(`${which}: the key id ${id} appears twice`);
    const key = BASE64.test(material) ? Buffer.from(material.replace(/-/g, '+').replace(/_/g, '/'), 'base64') : undefined;
    if (!key || key.length !== 32)
      return problems.push(
        `${which}: the key must be 32 bytes in base64 (44 characters; e.g. \`openssl rand -base64 32\`)${key ? `, got ${key.length} bytes` : ''}`,
      );
    keys.push({ id, key });
  });
  if (!problems.length && keys.length === 0) problems.push('no key given');
  if (problems.length) throw new Error(`${source}: ${problems.join('; ')}`);
  return { current: keys[0]!, byId: new Map(keys.map((k) => [k.id, k])) };
}

/** `REDELIVER_ENCRYPTION_KEYS`, or the file `REDELIVER_ENCRYPTION_KEYS_FILE` names (a Docker or Kubernetes secret). */
export function readKeyRing(reader: EnvReader): KeyRing | undefined {
  const inline = reader.string('REDELIVER_ENCRYPTION_KEYS');
  const file = reader.string('REDELIVER_ENCRYPTION_KEYS_FILE');
  if (inline !== undefined && file !== undefined)
    return reader.problem('REDELIVER_ENCRYPTION_KEYS', 'and REDELIVER_ENCRYPTION_KEYS_FILE are both set; give one');
  const variable = file !== undefined ? 'REDELIVER_ENCRYPTION_KEYS_FILE' : 'REDELIVER_ENCRYPTION_KEYS';
  let spec = inline;
  if (file !== undefined) {
    try {
      spec = readFileSync(file, 'utf8');
    } catch (err) {
      return reader.problem(variable, `cannot read ${JSON.stringify(file)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  if (spec === undefined) return undefined;
  try {
    return parseKeyRing(spec, variable);
  } catch (err) {
    return reader.problem(variable, (err as Error).message.slice(variable.length + 2));
  }
}
