import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findKey, parseKeys, parseRate } from '../../src/api/keys';
import { apiSettingsFromEnv } from '../../src/config/api';
import { ConfigError } from '../../src/config/errors';
import { filterFromFlags } from '../../src/cli/filter-flags';
import { type InvalidInputError } from '../../src/errors';
import { filterFrom } from '../../src/validation/filter';

const SECRET = 'a-secret-of-thirty-two-characters';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

test('keys are kept as hashes only, and found by the key or by its hash', () => {
  const other = 'another-secret-of-enough-length';
  const { keys, problems } = parseKeys([
    { key: SECRET, tenants: ['acme'], roles: ['produce'], name: 'gateway' },
    { sha256: sha(other), tenants: ['*'], roles: ['read', 'operate'], rateLimit: '600/min' },
  ]);
  expect(problems).toEqual([]);
  expect(JSON.stringify(keys, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v instanceof Set ? [...v] : v))).not.toContain(
    SECRET,
  );
  expect(findKey(keys, SECRET)).toMatchObject({ name: 'gateway', tenants: ['acme'] });
  expect(findKey(keys, other)).toMatchObject({ name: `key-${sha(other).slice(0, 8)}`, tenants: '*', rate: { max: 600, windowMs: 60_000 } });
  expect(findKey(keys, `${SECRET}x`)).toBeUndefined();
  expect(findKey(keys, '')).toBeUndefined();
});

test('every problem of a key file at once, each naming its entry and field', () => {
  const { problems } = parseKeys([
    { key: 'short', tenants: [], roles: ['write'] },
    { key: SECRET, sha256: sha(SECRET), tenants: ['acme'], roles: ['read'] },
    { tenants: ['*', 'acme'], roles: ['read'], sha256: sha('x'), rateLimit: 'fast' },
    { key: SECRET, tenants: ['acme'], roles: ['read'] },
    { key: SECRET, tenants: ['acme'], roles: ['read'], extra: 1 },
  ]);
  expect(problems.map((p) => p.field)).toEqual([
    '[0].key',
    '[0].tenants',
    '[0].roles.0',
    '[1]',
    '[2].tenants',
    '[2].rateLimit',
    '[3]',
    '[4].extra',
  ]);
  expect(parseKeys({}).problems).toEqual([{ field: '(keys)', message: 'must be a JSON array of keys' }]);
});

test('rates: per second by default, per minute or hour, or off', () => {
  expect(parseRate('100')).toEqual({ max: 100, windowMs: 1000 });
  expect(parseRate('5/s')).toEqual({ max: 5, windowMs: 1000 });
  expect(parseRate('600/min')).toEqual({ max: 600, windowMs: 60_000 });
  expect(parseRate('10/h')).toEqual({ max: 10, windowMs: 3_600_000 });
  expect(parseRate('off')).toBeNull();
  for (const bad of ['0', '-1', '1.5', '10/d', 'many']) expect(parseRate(bad)).toBeUndefined();
});

test("the API's settings name every bad variable and flag at once", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'api-keys-'));
  const file = path.join(dir, 'keys.json');
  writeFileSync(file, JSON.stringify([{ key: SECRET, tenants: ['acme'], roles: ['nothing'] }]));
  let error: unknown;
  try {
    apiSettingsFromEnv(
      {
        REDELIVER_API_KEYS_FILE: file,
        REDELIVER_API_RATE_LIMIT: 'lots',
        REDELIVER_API_BODY_LIMIT: '4MB',
        REDELIVER_API_TLS_CERT_FILE: path.join(dir, 'cert.pem'),
      },
      { port: '70000' },
    );
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).problems.map((p) => p.variable)).toEqual([
    '--port',
    'REDELIVER_API_KEYS_FILE',
    'REDELIVER_API_TLS_CERT_FILE',
    'REDELIVER_API_TLS_KEY_FILE',
    'REDELIVER_API_RATE_LIMIT',
    'REDELIVER_API_BODY_LIMIT',
  ]);
  expect((error as ConfigError).message).toContain('REDELIVER_API_KEYS_FILE: [0].roles.0: must be one of produce, operate, read');
  expect(() => apiSettingsFromEnv({})).toThrow(/REDELIVER_API_KEYS_FILE: is not set/);
  // a broken file is named, never quoted: it holds the keys
  expect(() => apiSettingsFromEnv({ REDELIVER_API_KEYS: `[{"key": ${SECRET}}]` })).toThrow(/^((?!secret).)*$/s);
  const settings = apiSettingsFromEnv({ REDELIVER_API_KEYS: JSON.stringify([{ key: SECRET, tenants: ['acme'], roles: ['read'] }]) });
  expect(settings).toMatchObject({ host: '127.0.0.1', port: 8090, rateLimit: { max: 100, windowMs: 1000 }, bodyLimit: 4 * 1024 * 1024 });
});

test('a filter is checked by one function, which names each field as its caller shows it', () => {
  const problems = (run: () => unknown) => {
    try {
      run();
    } catch (err) {
      return (err as InvalidInputError).problems.map((p) => p.field);
    }
    return [];
  };
  const bad = { state: 'waiting,lost', kind: 'alert', errorClass: 'odd', since: '', until: 'x'.repeat(200) };
  expect(problems(() => filterFrom(bad))).toEqual(['state', 'kind', 'errorClass', 'since', 'until']);
  expect(problems(() => filterFromFlags(bad))).toEqual(['--state', '--kind', '--error-class', '--since', '--until']);
  expect(filterFrom({ state: ['waiting', 'paused,delivered'], since: '2h' }, { now: 7_200_000 })).toEqual({
    state: ['waiting', 'paused', 'delivered'],
    since: new Date(0),
  });
});
