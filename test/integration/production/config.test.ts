import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { Redeliver } from '../../../src/client/index';
import { ConfigError, clientSettingsFromEnv, workerSettingsFromEnv, type Environment } from '../../../src/config';
import { parseKeyRing } from '../../../src/encryption/keys';
import { createWorker } from '../../../src/worker';
import { runCli } from '../../support/cli';
import { testAddress } from '../../support/temporal';

// Configuration from the environment, by Temporal's conventions plus redeliver's own variables: what is
// read, and that every bad value is refused at start with the variable's name.

const TLS_DIR = path.join(__dirname, '../../fixtures/tls');
const CERT = path.join(TLS_DIR, 'localhost.crt');
const KEY = path.join(TLS_DIR, 'localhost.key');
// an empty HOME: no ~/.config/temporalio/temporal.toml of the machine's can leak into these tests
const HOME = mkdtempSync(path.join(tmpdir(), 'redeliver-config-'));
const env = (vars: Environment): Environment => ({ HOME, ...vars });
const KEY_A = Buffer.alloc(32, 1).toString('base64');
const KEY_B = Buffer.alloc(32, 2).toString('base64url');

/** The problems a ConfigError lists, as `VARIABLE: message`. */
function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
    throw err;
  }
  throw new Error('expected a ConfigError, got none');
}

describe('defaults', () => {
  test('with nothing set, a worker talks to localhost:7233, namespace default, queue redeliver, public addresses only, no encryption', () => {
    const s = workerSettingsFromEnv(env({}));
    expect(s.temporal).toEqual({ connectionOptions: { address: 'localhost:7233' }, namespace: 'default' });
    expect(s).toMatchObject({
      taskQueue: 'redeliver',
      maxConcurrentAttempts: 200,
      shutdownGraceMs: 20_000,
      logLevel: 'WARN',
      tracesExporter: 'none',
      serviceName: 'redeliver-worker',
    });
    expect(s.allowAddresses.describe()).toBe('nothing');
    expect(s.encryptionKeys).toBeUndefined();
    expect(s.prometheusAddress).toBeUndefined();
    expect(s.healthAddress).toBeUndefined();
  });

  test('empty variables count as unset, as Docker passes them', () => {
    expect(
      workerSettingsFromEnv(env({ TEMPORAL_ADDRESS: '', REDELIVER_MAX_CONCURRENT_ATTEMPTS: ' ', REDELIVER_ENCRYPTION_KEYS: '' })),
    ).toMatchObject({
      temporal: { connectionOptions: { address: 'localhost:7233' } },
      maxConcurrentAttempts: 200,
    });
  });
});

describe("Temporal's conventions (@temporalio/envconfig)", () => {
  test('address, namespace and an API key: TLS goes on by itself, as Temporal Cloud needs', () => {
    const s = clientSettingsFromEnv(
      env({ TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233', TEMPORAL_NAMESPACE: 'iot.a1b2c', TEMPORAL_API_KEY: 'secret-key' }),
    );
    expect(s.temporal).toEqual({
      connectionOptions: { address: 'us-east-1.aws.api.temporal.io:7233', apiKey: 'secret-key', tls: true },
      namespace: 'iot.a1b2c',
    });
  });

  test('mTLS from certificate files, with a server name', () => {
    const s = clientSettingsFromEnv(
      env({
        TEMPORAL_ADDRESS: 'iot.a1b2c.tmprl.cloud:7233',
        TEMPORAL_TLS_CLIENT_CERT_PATH: CERT,
        TEMPORAL_TLS_CLIENT_KEY_PATH: KEY,
        TEMPORAL_TLS_SERVER_NAME: 'iot.a1b2c.tmprl.cloud',
      }),
    );
    const tls = s.temporal.connectionOptions.tls as { clientCertPair: { crt: Uint8Array; key: Uint8Array }; serverNameOverride: string };
    expect(Buffer.from(tls.clientCertPair.crt).toString()).toContain('BEGIN CERTIFICATE');
    expect(Buffer.from(tls.clientCertPair.key).toString()).toContain('PRIVATE KEY');
    expect(tls.serverNameOverride).toBe('iot.a1b2c.tmprl.cloud');
  });

  test('a TOML profile, chosen by TEMPORAL_PROFILE, with variables winning over it; gRPC metadata from TEMPORAL_GRPC_META_*', () => {
    const file = path.join(HOME, 'temporal.toml');
    writeFileSync(file, '[profile.prod]\naddress = "prod.example:7233"\nnamespace = "deliveries"\n[profile.prod.tls]\n');
    const s = clientSettingsFromEnv(
      env({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'override', TEMPORAL_GRPC_META_X_TENANT: 'acme' }),
    );
    expect(s.temporal.connectionOptions.address).toBe('prod.example:7233');
    expect(s.temporal.namespace).toBe('override');
    expect(s.temporal.connectionOptions.tls).toBeTruthy();
    expect(s.temporal.connectionOptions.metadata).toEqual({ 'x-tenant': 'acme' });
  });

  test('every bad Temporal variable is named, all at once', () => {
    expect(
      problemsOf(() =>
        clientSettingsFromEnv(
          env({
            TEMPORAL_ADDRESS: 'http://temporal:7233',
            TEMPORAL_NAMESPACE: 'has space',
            TEMPORAL_TLS: 'yes',
            TEMPORAL_TLS_CLIENT_CERT_PATH: '/nonexistent/client.pem',
            TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true',
          }),
        ),
      ),
    ).toEqual([
      'TEMPORAL_ADDRESS: must be host:port, e.g. temporal:7233 or <namespace>.<account>.tmprl.cloud:7233; got "http://temporal:7233"',
      "TEMPORAL_NAMESPACE: must be a namespace name (letters, digits, '.', '_', '-'), got \"has space\"",
      'TEMPORAL_TLS: must be true or false, got "yes"',
      'TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read "/nonexistent/client.pem"',
      'TEMPORAL_TLS_CLIENT_KEY_PATH: mTLS needs both the client certificate and its key (…_PATH or …_DATA)',
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: is not supported by the TypeScript SDK; set TEMPORAL_TLS_SERVER_NAME to the name on the server certificate instead',
    ]);
  });

  test('an API key with TLS switched off, a file and inline PEM at once, a profile that does not exist', () => {
    expect(problemsOf(() => clientSettingsFromEnv(env({ TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' })))).toEqual([
      'TEMPORAL_TLS: is false, but TEMPORAL_API_KEY is set: API keys are only sent over TLS',
    ]);
    expect(
      problemsOf(() => clientSettingsFromEnv(env({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: CERT, TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'pem' }))),
    ).toEqual(['TEMPORAL_TLS_SERVER_CA_CERT_PATH: and TEMPORAL_TLS_SERVER_CA_CERT_DATA are both set; give one']);
    expect(problemsOf(() => clientSettingsFromEnv(env({ TEMPORAL_PROFILE: 'nope' })))).toEqual([
      "TEMPORAL_PROFILE: could not load Temporal's client configuration: Profile 'nope' not found in config data",
    ]);
  });
});

describe("redeliver's variables", () => {
  test('are read', () => {
    const bundle = path.join(HOME, 'bundle.js');
    writeFileSync(bundle, '');
    const s = workerSettingsFromEnv(
      env({
        REDELIVER_TASK_QUEUE: 'iot',
        REDELIVER_MAX_CONCURRENT_ATTEMPTS: '500',
        REDELIVER_MAX_CONCURRENT_WORKFLOW_TASKS: '80',
        REDELIVER_SHUTDOWN_GRACE: '45s',
        REDELIVER_ALLOW_ADDRESSES: 'private,100.64.0.0/10',
        REDELIVER_ENCRYPTION_KEYS: `k2:${KEY_B},k1:${KEY_A}`,
        REDELIVER_WORKFLOW_BUNDLE: bundle,
        REDELIVER_PROMETHEUS_ADDRESS: '0.0.0.0:9464',
        REDELIVER_HEALTH_ADDRESS: '[::]:8080',
        REDELIVER_LOG_LEVEL: 'info',
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_SERVICE_NAME: 'redeliver-eu',
        REDELIVER_RETRY_BUDGET: '2.5/s',
        REDELIVER_RETRY_BUDGET_BURST: '5',
        REDELIVER_ENDPOINT_HEALTH: 'false',
      }),
    );
    expect(s).toMatchObject({
      retryBudget: { perSecond: 2.5, burst: 5 },
      endpointHealth: false,
      taskQueue: 'iot',
      maxConcurrentAttempts: 500,
      maxConcurrentWorkflowTasks: 80,
      shutdownGraceMs: 45_000,
      workflowBundlePath: bundle,
      prometheusAddress: '0.0.0.0:9464',
      healthAddress: '[::]:8080',
      logLevel: 'INFO',
      tracesExporter: 'console',
      serviceName: 'redeliver-eu',
    });
    expect(s.allowAddresses.refusal('10.1.1.1')).toBeUndefined();
    expect(s.allowAddresses.refusal('100.100.1.1')).toBeUndefined();
    expect(s.allowAddresses.refusal('127.0.0.1')?.range).toBe('loopback');
    expect(s.encryptionKeys?.current.id).toBe('k2');
    expect([...s.encryptionKeys!.byId.keys()]).toEqual(['k2', 'k1']);
  });

  test('every bad one is named, all at once, and no key material is ever repeated', () => {
    const problems = problemsOf(() =>
      workerSettingsFromEnv(
        env({
          REDELIVER_MAX_CONCURRENT_ATTEMPTS: '0',
          REDELIVER_MAX_CONCURRENT_WORKFLOW_TASKS: 'many',
          REDELIVER_SHUTDOWN_GRACE: 'a while',
          REDELIVER_ALLOW_ADDRESSES: 'loopback,intranet',
          REDELIVER_ENCRYPTION_KEYS: `k1:${KEY_A.slice(0, 20)}`,
          REDELIVER_WORKFLOW_BUNDLE: '/nonexistent/bundle.js',
          REDELIVER_PROMETHEUS_ADDRESS: '9464',
          REDELIVER_HEALTH_ADDRESS: 'localhost:99999',
          REDELIVER_LOG_LEVEL: 'LOUD',
          OTEL_TRACES_EXPORTER: 'jaeger',
          REDELIVER_RETRY_BUDGET: 'lots',
          REDELIVER_RETRY_BUDGET_BURST: '-1',
          REDELIVER_ENDPOINT_HEALTH: 'maybe',
        }),
      ),
    );
    expect(problems).toEqual([
      'REDELIVER_ENCRYPTION_KEYS: entry 1 (k1): the key must be 32 bytes in base64 (44 characters; e.g. `openssl rand -base64 32`), got 15 bytes',
      'REDELIVER_SHUTDOWN_GRACE: must be a duration such as 20s or 1m (a bare number is ms), got "a while"',
      'REDELIVER_ALLOW_ADDRESSES: "intranet" is not a range name (metadata, this-network, loopback, private, link-local, cgnat, multicast, reserved), a CIDR or an IP address',
      'REDELIVER_WORKFLOW_BUNDLE: no file at "/nonexistent/bundle.js" (build one with `redeliver bundle --out FILE`)',
      'REDELIVER_MAX_CONCURRENT_ATTEMPTS: must be a whole number above 0, got "0"',
      'REDELIVER_LOG_LEVEL: must be one of TRACE, DEBUG, INFO, WARN, ERROR; got "LOUD"',
      'OTEL_TRACES_EXPORTER: must be one of none, console, otlp; got "jaeger"',
      'REDELIVER_MAX_CONCURRENT_WORKFLOW_TASKS: must be a whole number above 0, got "many"',
      'REDELIVER_RETRY_BUDGET_BURST: must be a whole number above 0, got "-1"',
      'REDELIVER_RETRY_BUDGET: must be retries per second to one endpoint above 0 (e.g. 10 or 2.5/s), or off; got "lots"',
      'REDELIVER_ENDPOINT_HEALTH: must be true or false, got "maybe"',
      'REDELIVER_PROMETHEUS_ADDRESS: must be host:port, e.g. 0.0.0.0:9464; got "9464"',
      'REDELIVER_HEALTH_ADDRESS: must be host:port, e.g. 0.0.0.0:8080; got "localhost:99999"',
    ]);
    // the default, and off
    expect(workerSettingsFromEnv(env({})).retryBudget).toEqual({ perSecond: 10, burst: 20 });
    expect(workerSettingsFromEnv(env({ REDELIVER_RETRY_BUDGET: 'off' })).retryBudget).toBeNull();
    expect(problems.join('\n')).not.toContain(KEY_A.slice(0, 20));
  });

  test('encryption keys: format, ids, duplicates, and a key file (a Docker secret)', () => {
    expect(() => parseKeyRing('', 'V')).toThrow('V: no key given');
    expect(() => parseKeyRing(KEY_A, 'V')).toThrow('V: entry 1 must be <key id>:<base64 key>');
    expect(() => parseKeyRing(`bad/id:${KEY_A}`, 'V')).toThrow("V: entry 1: the key id must be 1-64 letters, digits, '.', '_' or '-'");
    expect(() => parseKeyRing(`k1:${KEY_A} k1:${KEY_B}`, 'V')).toThrow('V: entry 2 (k1): the key id k1 appears twice');
    expect(() => parseKeyRing('k1:not*base64', 'V')).toThrow('V: entry 1 (k1): the key must be 32 bytes in base64');
    const file = path.join(HOME, 'keys');
    writeFileSync(file, `2026-11:${KEY_B}\n2026-05:${KEY_A}\n`);
    expect(workerSettingsFromEnv(env({ REDELIVER_ENCRYPTION_KEYS_FILE: file })).encryptionKeys?.current.id).toBe('2026-11');
    expect(problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_ENCRYPTION_KEYS_FILE: '/nonexistent/keys' })))).toEqual([
      'REDELIVER_ENCRYPTION_KEYS_FILE: cannot read "/nonexistent/keys": ENOENT',
    ]);
    expect(
      problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_ENCRYPTION_KEYS_FILE: file, REDELIVER_ENCRYPTION_KEYS: `k:${KEY_A}` }))),
    ).toEqual(['REDELIVER_ENCRYPTION_KEYS: and REDELIVER_ENCRYPTION_KEYS_FILE are both set; give one']);
  });
});

describe('MQTT credentials: every one configured is checked at start, and each must name its brokers', () => {
  const login = { username: 'gw', password: 'hunter2' };
  const bound = (brokers: unknown) => JSON.stringify({ ...login, brokers, tenants: ['acme'] });

  test('a credential without brokers, or with a bad one, is named: the variable, or the file and the entry', () => {
    const file = path.join(HOME, 'credentials.json');
    writeFileSync(
      file,
      JSON.stringify({
        'hub-acme': JSON.parse(bound(['mqtts://hub.example.com:8883'])),
        legacy: login,
        'no-path': JSON.parse(bound(['mqtt://hub/x'])),
      }),
    );
    const problems = problemsOf(() =>
      workerSettingsFromEnv(
        env({
          REDELIVER_MQTT_CREDENTIALS_HUB_OK: bound(['mqtt://hub.example.com']),
          REDELIVER_MQTT_CREDENTIALS_HUB_OLD: JSON.stringify(login),
          REDELIVER_MQTT_CREDENTIALS_HUB_HTTP: bound(['https://hub.example.com']),
          REDELIVER_MQTT_CREDENTIALS_HUB_TEXT: 'gw:hunter2',
          REDELIVER_MQTT_CREDENTIALS_UNSET: '',
          REDELIVER_MQTT_CREDENTIALS_FILE: file,
        }),
      ),
    );
    const required =
      '"brokers" is required: the brokers this MQTT credential may be sent to, e.g. "brokers": ["mqtts://hub.example.com:8883"]';
    expect(problems).toEqual([
      `REDELIVER_MQTT_CREDENTIALS_HUB_OLD: ${required}`,
      'REDELIVER_MQTT_CREDENTIALS_HUB_HTTP: "brokers": entry 1 ("https://hub.example.com"): scheme https is not one of mqtt, mqtts',
      'REDELIVER_MQTT_CREDENTIALS_HUB_TEXT: must be JSON such as {"username": "…", "password": "…", "brokers": ["mqtts://host:8883"], "tenants": ["acme"]}',
      `REDELIVER_MQTT_CREDENTIALS_FILE: ${file}: "legacy": ${required}`,
      `REDELIVER_MQTT_CREDENTIALS_FILE: ${file}: "no-path": "brokers": entry 1 ("mqtt://hub/x"): must be scheme://host[:port] alone, without a path, query or fragment`,
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
  });

  test('bound credentials pass; a file that cannot be read is named', () => {
    const file = path.join(HOME, 'bound.json');
    writeFileSync(file, JSON.stringify({ a: JSON.parse(bound(['mqtt://10.0.0.5', 'mqtts://Hub.Example.com:8883/'])) }));
    expect(() =>
      workerSettingsFromEnv(env({ REDELIVER_MQTT_CREDENTIALS_A: bound(['mqtt://hub']), REDELIVER_MQTT_CREDENTIALS_FILE: file })),
    ).not.toThrow();
    expect(problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_MQTT_CREDENTIALS_FILE: '/nonexistent/credentials.json' })))).toEqual([
      "REDELIVER_MQTT_CREDENTIALS_FILE: /nonexistent/credentials.json cannot be read as JSON: ENOENT: no such file or directory, open '/nonexistent/credentials.json'",
    ]);
  });
});

describe('signing secrets: checked at start as MQTT credentials are, each bound to its endpoints', () => {
  test('a secret without endpoints, or too short to sign with, is named; the secret is not quoted', () => {
    const key = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const problems = problemsOf(() =>
      workerSettingsFromEnv(
        env({
          REDELIVER_SIGNING_SECRETS_OK: JSON.stringify({ secrets: [key], endpoints: ['https://ingest.example.com'], tenants: ['acme'] }),
          REDELIVER_SIGNING_SECRETS_UNBOUND: JSON.stringify({ secrets: [key], tenants: ['acme'] }),
          REDELIVER_SIGNING_SECRETS_SHORT: JSON.stringify({
            secrets: ['whsec_c2hvcnQ='],
            endpoints: ['https://ingest.example.com'],
            tenants: ['acme'],
          }),
        }),
      ),
    );
    expect(problems).toEqual([
      'REDELIVER_SIGNING_SECRETS_UNBOUND: "endpoints" is required: the endpoints this signing secret may be sent to, e.g. "endpoints": ["https://ingest.example.com"]',
      'REDELIVER_SIGNING_SECRETS_SHORT: "secrets" entry 1 must be whsec_ and the base64 of 24 to 64 random bytes (openssl rand -base64 32)',
    ]);
    expect(problems.join('\n')).not.toContain(key);
  });
});

describe('secrets are bound to tenants: a worker does not start with a secret that does not say whose it is', () => {
  const key = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const required = (what: string) =>
    `"tenants" is required: the tenants whose deliveries may use this ${what}, e.g. "tenants": ["acme"], or ["*"] for every tenant`;

  test('a signing secret or MQTT credential without "tenants" is named: the variable, or the file and the entry', () => {
    const file = path.join(HOME, 'untenanted.json');
    writeFileSync(file, JSON.stringify({ legacy: { username: 'gw', password: 'hunter2', brokers: ['mqtts://hub.example.com'] } }));
    const problems = problemsOf(() =>
      workerSettingsFromEnv(
        env({
          REDELIVER_SIGNING_SECRETS_ACME_HOOKS: JSON.stringify({ secrets: [key], endpoints: ['https://hooks.acme.example'] }),
          REDELIVER_MQTT_CREDENTIALS_HUB_ACME: JSON.stringify({
            username: 'gw',
            password: 'hunter2',
            brokers: ['mqtts://hub.example.com'],
          }),
          REDELIVER_MQTT_CREDENTIALS_HUB_ODD: JSON.stringify({
            username: 'gw',
            password: 'hunter2',
            brokers: ['mqtts://hub.example.com'],
            tenants: ['*', 'acme'],
          }),
          REDELIVER_MQTT_CREDENTIALS_FILE: file,
        }),
      ),
    );
    expect(problems).toEqual([
      `REDELIVER_MQTT_CREDENTIALS_HUB_ACME: ${required('MQTT credential')}`,
      'REDELIVER_MQTT_CREDENTIALS_HUB_ODD: "tenants": "*" stands for every tenant: give it alone',
      `REDELIVER_MQTT_CREDENTIALS_FILE: ${file}: "legacy": ${required('MQTT credential')}`,
      `REDELIVER_SIGNING_SECRETS_ACME_HOOKS: ${required('signing secret')}`,
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems.join('\n')).not.toContain(key);
  });

  test('"*", said explicitly, allows every tenant, and the worker starts', () => {
    expect(() =>
      workerSettingsFromEnv(
        env({
          REDELIVER_SIGNING_SECRETS_SHARED: JSON.stringify({ secrets: [key], endpoints: ['https://hooks.example'], tenants: ['*'] }),
          REDELIVER_MQTT_CREDENTIALS_SHARED: JSON.stringify({ username: 'gw', brokers: ['mqtts://hub.example.com'], tenants: ['*'] }),
        }),
      ),
    ).not.toThrow();
  });
});

describe('endpoint limits: a default for every endpoint without its own', () => {
  test('read as numbers, rates in any unit, or off; a bad one is named', () => {
    expect(
      workerSettingsFromEnv(env({ REDELIVER_ENDPOINT_MAX_IN_FLIGHT: '50', REDELIVER_ENDPOINT_RATE: '12000/min' })).endpointLimits,
    ).toEqual({
      maxInFlight: 50,
      rate: 200,
    });
    expect(workerSettingsFromEnv(env({})).endpointLimits).toEqual({ maxInFlight: null, rate: null });
    expect(
      problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_ENDPOINT_MAX_IN_FLIGHT: 'many', REDELIVER_ENDPOINT_RATE: '5/day' }))),
    ).toEqual([
      'REDELIVER_ENDPOINT_MAX_IN_FLIGHT: must be a whole number from 1 to 100000 or "off"; got "many"',
      'REDELIVER_ENDPOINT_RATE: must be attempts per second above 0 (200, "200/s", "12000/min") up to 1000000 or "off"; got "5/day"',
    ]);
  });
});

describe("the endpoint's timeout floor: shorter timeouts a producer chose are the producer's failure", () => {
  test('1 s by default, a duration, 0 for none; a bad one is named', () => {
    expect(workerSettingsFromEnv(env({})).endpointTimeoutFloorMs).toBe(1_000);
    expect(workerSettingsFromEnv(env({ REDELIVER_ENDPOINT_TIMEOUT_FLOOR: '250ms' })).endpointTimeoutFloorMs).toBe(250);
    expect(workerSettingsFromEnv(env({ REDELIVER_ENDPOINT_TIMEOUT_FLOOR: '0' })).endpointTimeoutFloorMs).toBe(0);
    expect(problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_ENDPOINT_TIMEOUT_FLOOR: '1h' })))).toEqual([
      'REDELIVER_ENDPOINT_TIMEOUT_FLOOR: must be a duration from 0 to 5m such as 1s or 500ms (a bare number is ms), got "1h"',
    ]);
  });
});

describe('outages: the hold and the recovery pace', () => {
  test('the hold on and a cap of 128 by default; off, another cap; a bad value is named', () => {
    expect(workerSettingsFromEnv(env({}))).toMatchObject({ outageHold: true, recoveryMaxInFlight: 128 });
    expect(workerSettingsFromEnv(env({ REDELIVER_OUTAGE_HOLD: 'off', REDELIVER_RECOVERY_MAX_IN_FLIGHT: '8' }))).toMatchObject({
      outageHold: false,
      recoveryMaxInFlight: 8,
    });
    expect(problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_OUTAGE_HOLD: 'yes', REDELIVER_RECOVERY_MAX_IN_FLIGHT: '0' })))).toEqual([
      'REDELIVER_OUTAGE_HOLD: must be one of on, off; got "yes"',
      'REDELIVER_RECOVERY_MAX_IN_FLIGHT: must be a whole number above 0, got "0"',
    ]);
  });
});

describe('endpoint workflows per tenant: a bound on the distinct endpoints whose workflows one tenant opens', () => {
  test('100 by default, a whole number, or off; a bad one is named, as is a bad option of createWorker', async () => {
    expect(workerSettingsFromEnv(env({})).maxEndpointsPerTenant).toBe(100);
    expect(workerSettingsFromEnv(env({ REDELIVER_MAX_ENDPOINTS_PER_TENANT: '20' })).maxEndpointsPerTenant).toBe(20);
    expect(workerSettingsFromEnv(env({ REDELIVER_MAX_ENDPOINTS_PER_TENANT: 'off' })).maxEndpointsPerTenant).toBeNull();
    expect(problemsOf(() => workerSettingsFromEnv(env({ REDELIVER_MAX_ENDPOINTS_PER_TENANT: '0' })))).toEqual([
      'REDELIVER_MAX_ENDPOINTS_PER_TENANT: must be a whole number above 0, got "0"',
    ]);
    await expect(createWorker({ env: env({}), maxEndpointsPerTenant: 2.5 })).rejects.toThrow(
      /maxEndpointsPerTenant: must be a whole number above 0 or null, got 2.5/,
    );
  });
});

describe('validated at start', () => {
  test('createWorker refuses a bad environment before it connects anywhere', async () => {
    await expect(createWorker({ env: env({ TEMPORAL_ADDRESS: 'nowhere', REDELIVER_ALLOW_ADDRESSES: 'lan' }) })).rejects.toThrow(
      /invalid configuration:\n {2}- TEMPORAL_ADDRESS: must be host:port.*\n {2}- REDELIVER_ALLOW_ADDRESSES: "lan" is not a range name/,
    );
  });

  test('`redeliver worker` exits 2, naming the variable', async () => {
    const run = await runCli(['worker'], { HOME, REDELIVER_MAX_CONCURRENT_ATTEMPTS: 'lots', TEMPORAL_TLS: 'on' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('REDELIVER_MAX_CONCURRENT_ATTEMPTS: must be a whole number above 0, got "lots"');
    expect(run.stderr).toContain('TEMPORAL_TLS: must be true or false, got "on"');
  });

  test('`redeliver worker` with an MQTT credential bound to no broker exits 2 before it connects, naming the variable', async () => {
    const credential = JSON.stringify({ username: 'gw', password: 'hunter2' });
    const run = await runCli(['worker', '--address', '127.0.0.1:1'], { HOME, REDELIVER_MQTT_CREDENTIALS_HUB_ACME: credential });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('REDELIVER_MQTT_CREDENTIALS_HUB_ACME: "brokers" is required');
    expect(run.stderr).not.toContain('hunter2');
  });

  test('createWorker checks the credentials of the environment it is given', async () => {
    await expect(
      createWorker({ address: '127.0.0.1:1', env: env({ REDELIVER_MQTT_CREDENTIALS_HUB_ACME: JSON.stringify({ password: 'x' }) }) }),
    ).rejects.toThrow('REDELIVER_MQTT_CREDENTIALS_HUB_ACME: "brokers" is required');
  });

  test('a Redeliver on a client without the configured keys is refused: it would store plain text', async () => {
    const connection = await connectClient({ address: testAddress() });
    const saved = process.env.REDELIVER_ENCRYPTION_KEYS;
    try {
      process.env.REDELIVER_ENCRYPTION_KEYS = `k1:${KEY_A}`;
      expect(() => new Redeliver(new Client({ connection }))).toThrow(
        'REDELIVER_ENCRYPTION_KEYS: is set, but this Client has no payload codec',
      );
    } finally {
      if (saved === undefined) delete process.env.REDELIVER_ENCRYPTION_KEYS;
      else process.env.REDELIVER_ENCRYPTION_KEYS = saved;
      await connection.close();
    }
  });
});
