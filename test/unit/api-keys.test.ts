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

test('the server\'s timeouts and connection cap: documented defaults, durations, "off", and each bad value named', () => {
  const keys = JSON.stringify([{ key: SECRET, tenants: ['acme'], roles: ['read'] }]);
  expect(apiSettingsFromEnv({ REDELIVER_API_KEYS: keys })).toMatchObject({
    requestTimeoutMs: 30_000,
    connectionTimeoutMs: 360_000,
    keepAliveTimeoutMs: 72_000,
    maxConnectionsPerAddress: 100,
  });
  const set = {
    REDELIVER_API_KEYS: keys,
    REDELIVER_API_REQUEST_TIMEOUT: '10s',
    REDELIVER_API_CONNECTION_TIMEOUT: '2m',
    REDELIVER_API_KEEP_ALIVE_TIMEOUT: '1500',
    REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS: 'off',
  };
  expect(apiSettingsFromEnv(set)).toMatchObject({
    requestTimeoutMs: 10_000,
    connectionTimeoutMs: 120_000,
    keepAliveTimeoutMs: 1_500,
    maxConnectionsPerAddress: null,
  });
  let error: unknown;
  try {
    apiSettingsFromEnv({
      REDELIVER_API_KEYS: keys,
      REDELIVER_API_REQUEST_TIMEOUT: '0s',
      REDELIVER_API_CONNECTION_TIMEOUT: 'forever',
      REDELIVER_API_KEEP_ALIVE_TIMEOUT: '-5s',
      REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS: '0',
    });
  } catch (err) {
    error = err;
  }
  expect((error as ConfigError).problems.map((p) => p.variable)).toEqual([
    'REDELIVER_API_REQUEST_TIMEOUT',
    'REDELIVER_API_CONNECTION_TIMEOUT',
    'REDELIVER_API_KEEP_ALIVE_TIMEOUT',
    'REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS',
  ]);
  expect((error as ConfigError).message).toContain(
    'REDELIVER_API_MAX_CONNECTIONS_PER_ADDRESS: must be a whole number above 0, or off; got "0"',
  );
});

test('the tenant "redeliver" (its operational events) is no key\'s: refused, naming the entry and field', () => {
  const { problems } = parseKeys([{ key: SECRET, tenants: ['acme', 'redeliver'], roles: ['read'] }]);
  expect(problems).toEqual([{ field: '[0].tenants.1', message: expect.stringMatching(/must not be "redeliver": .*reserved/) }]);
  expect(() =>
    apiSettingsFromEnv({ REDELIVER_API_KEYS: JSON.stringify([{ key: SECRET, tenants: ['redeliver'], roles: ['read'] }]) }),
  ).toThrow(/REDELIVER_API_KEYS: \[0\]\.tenants\.0: must not be "redeliver"/);
});

test('a time too far back for a Date is a problem naming its field, not a RangeError', () => {
  for (const since of ['100000000y', '300000y']) {
    expect(() => filterFrom({ since })).toThrow(
      expect.objectContaining({ problems: [{ field: 'since', message: expect.stringMatching(/too far back/) }] }),
    );
    expect(() => filterFromFlags({ since })).toThrow(
      expect.objectContaining({ problems: [expect.objectContaining({ field: '--since' })] }),
    );
  }
  expect(() => filterFrom({ until: '+300000-01-01' })).toThrow(
    expect.objectContaining({ problems: [expect.objectContaining({ field: 'until' })] }),
  );
  // far back, yet a Date: still a filter
  expect(filterFrom({ since: '10000y' }, { now: 0 }).since!.getUTCFullYear()).toBeLessThan(-8000);
});
