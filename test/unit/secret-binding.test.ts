import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { classify } from '../../src/classify';
import { credentialProblems, MQTT_CREDENTIAL } from '../../src/transports/mqtt-credentials';
import {
  bindingAllows,
  parseBinding,
  parseTenants,
  releaseSecret,
  targetOrigin,
  type SecretKind,
} from '../../src/transports/secret-binding';

// A secret the worker resolves by name goes only to the targets it is bound to: how targets compare.

const ports = MQTT_CREDENTIAL.ports;
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('targetOrigin: where a connection to the URL goes, in one spelling', () => {
  test.each([
    ['mqtt://hub.example.com', 'mqtt://hub.example.com:1883'],
    ['mqtts://hub.example.com', 'mqtts://hub.example.com:8883'],
    ['mqtts://HUB.Example.COM:8883', 'mqtts://hub.example.com:8883'],
    ['MQTT://hub.example.com:1883/', 'mqtt://hub.example.com:1883'],
    ['mqtt://hub.example.com:01883', 'mqtt://hub.example.com:1883'],
    ['mqtts://[0:0::1]:8883', 'mqtts://[::1]:8883'],
    ['mqtt://10.0.0.5', 'mqtt://10.0.0.5:1883'],
  ])('%s → %s', (url, origin) => {
    expect(targetOrigin(url, ports)).toBe(origin);
  });

  test('anything it cannot place is an error, not a match', () => {
    expect(() => targetOrigin('hub.example.com', ports)).toThrow('is not a URL');
    expect(() => targetOrigin('hub.example.com:1883', ports)).toThrow('scheme hub.example.com is not one of mqtt, mqtts');
    expect(() => targetOrigin('https://hub.example.com', ports)).toThrow('scheme https is not one of mqtt, mqtts');
    expect(() => targetOrigin('mqtt://', ports)).toThrow('names no host');
  });
});

describe('bindingAllows: scheme, host (case-insensitive) and port (default filled in) must all match', () => {
  const binding = parseBinding(['mqtts://Hub.Example.com', 'mqtt://10.0.0.5:1884'], MQTT_CREDENTIAL);

  test.each(['mqtts://hub.example.com:8883', 'mqtts://HUB.EXAMPLE.COM', 'mqtts://hub.example.com:8883/', 'mqtt://10.0.0.5:1884'])(
    '%s may receive it',
    (url) => {
      expect(bindingAllows(binding, url, ports)).toBe(true);
    },
  );

  test.each([
    ['another host', 'mqtts://attacker.example:8883'],
    ['a host that merely ends like it', 'mqtts://evilhub.example.com:8883'],
    ['another port', 'mqtts://hub.example.com:8884'],
    ['the same host without TLS', 'mqtt://hub.example.com:8883'],
    ['the default port of the other scheme', 'mqtt://hub.example.com'],
    ['a trailing dot (another spelling is another broker)', 'mqtts://hub.example.com.:8883'],
    ['the same address spelt otherwise', 'mqtt://10.0.0.05:1884'],
    ['the right port of another entry', 'mqtt://10.0.0.5:1883'],
    ['not a URL', 'hub.example.com'],
  ])('%s (%s) may not', (_what, url) => {
    expect(bindingAllows(binding, url, ports)).toBe(false);
  });
});

describe('parseBinding: the configured list, checked at start', () => {
  test('is required, and not empty', () => {
    expect(() => parseBinding(undefined, MQTT_CREDENTIAL)).toThrow(
      '"brokers" is required: the brokers this MQTT credential may be sent to, e.g. "brokers": ["mqtts://hub.example.com:8883"]',
    );
    expect(() => parseBinding([], MQTT_CREDENTIAL)).toThrow('"brokers" is required');
    expect(() => parseBinding('mqtt://hub', MQTT_CREDENTIAL)).toThrow('"brokers" must be a list of URLs');
  });

  test('each entry is a broker alone; a password in one is never repeated', () => {
    expect(() =>
      parseBinding(['mqtt://hub:1883', 'mqtt://hub:1883/path', 42, 'mqtt://u:hunter2@hub', 'ftp://hub', 'mqtt://hub?x=1'], MQTT_CREDENTIAL),
    ).toThrow(
      '"brokers": entry 2 ("mqtt://hub:1883/path"): must be scheme://host[:port] alone, without a path, query or fragment; ' +
        'entry 3: must be a URL or { url, ca?, caFile?, servername? }; entry 4: must not carry a user name or password; entry 5 ("ftp://hub"): scheme ftp is not one of mqtt, mqtts; ' +
        'entry 6 ("mqtt://hub?x=1"): must be scheme://host[:port] alone, without a path, query or fragment',
    );
    expect(() => parseBinding(['mqtt://u:hunter2@hub'], MQTT_CREDENTIAL)).not.toThrow(/hunter2/);
  });

  test("an mqtts broker's entry may carry the TLS trust for it: a CA (inline or a file read at each connect) and a server name", () => {
    const caFile = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-ca-')), 'ca.pem');
    writeFileSync(caFile, PEM);
    const bound = parseBinding(
      [
        'mqtt://hub:1884',
        { url: 'mqtts://Hub:8883', ca: PEM, servername: 'hub.internal' },
        { url: 'mqtts://10.0.0.5', caFile },
        { url: 'mqtts://plain' },
      ],
      MQTT_CREDENTIAL,
    );
    expect(bound).toEqual([
      { origin: 'mqtt://hub:1884' },
      { origin: 'mqtts://hub:8883', options: { ca: PEM, servername: 'hub.internal' } },
      { origin: 'mqtts://10.0.0.5:8883', options: { ca: PEM } },
      { origin: 'mqtts://plain:8883', options: {} },
    ]);
    const released = releaseSecret(
      MQTT_CREDENTIAL,
      'hub',
      'mqtts://hub',
      () => ({ password: 'p', brokers: [{ url: 'mqtts://hub', ca: PEM }], tenants: ['acme'] }),
      'acme',
    );
    expect(released).toEqual({ ok: true, secret: expect.objectContaining({ password: 'p' }), options: { ca: PEM } });
  });

  test('a bad TLS entry names its field, and the worker does not start with it', () => {
    const problems = (entry: object) => () => parseBinding([entry], MQTT_CREDENTIAL);
    expect(problems({ url: 'mqtt://hub', ca: PEM })).toThrow(
      '"brokers": entry 1 ("mqtt://hub"): ca, caFile and servername apply to mqtts:// brokers only',
    );
    expect(problems({ url: 'mqtts://hub', ca: PEM, caFile: '/etc/ca.pem' })).toThrow('give ca or caFile, not both');
    expect(problems({ url: 'mqtts://hub', ca: 'trust me' })).toThrow('ca must hold PEM certificates');
    expect(problems({ url: 'mqtts://hub', caFile: '/nonexistent/ca.pem' })).toThrow('caFile "/nonexistent/ca.pem" cannot be read: ENOENT');
    expect(problems({ url: 'mqtts://hub', servername: 'a b' })).toThrow('servername must be a host name');
    expect(problems({ url: 'mqtts://hub', cert: PEM })).toThrow('has unknown fields: cert (known: url, ca, caFile, servername)');
    expect(problems({ ca: PEM })).toThrow('entry 1: must be a URL or { url, ca?, caFile?, servername? }');
    const env = {
      REDELIVER_MQTT_CREDENTIALS_HUB: JSON.stringify({
        password: 'hunter2',
        brokers: [{ url: 'mqtts://hub', caFile: '/nonexistent/ca.pem' }],
        tenants: ['acme'],
      }),
    };
    expect(credentialProblems(env)).toEqual([
      { variable: 'REDELIVER_MQTT_CREDENTIALS_HUB', message: expect.stringContaining('caFile "/nonexistent/ca.pem" cannot be read') },
    ]);
  });
});

describe('releaseSecret: the one gate a secret resolved by name passes before anything connects', () => {
  type Secret = { password: string; targets: readonly string[]; tenants?: unknown };
  const KIND: SecretKind<Secret> = {
    label: 'signing secret',
    field: 'targets',
    ports: { https: 443 },
    example: 'https://ingest.example.com',
    targetsOf: (s) => s.targets,
    tenantsOf: (s) => s.tenants,
    sources: (name) => `SECRET_${name.toUpperCase()}`,
  };
  const secrets: Record<string, Secret> = {
    app: { password: 'p', targets: ['https://ingest.example.com'], tenants: ['acme'] },
    shared: { password: 's', targets: ['https://ingest.example.com'], tenants: ['*'] },
  };
  const resolve = (name: string) => secrets[name];

  test('a bound target gets the secret', () => {
    expect(releaseSecret(KIND, 'app', 'https://INGEST.example.com:443/hooks?x=1', resolve, 'acme')).toEqual({
      ok: true,
      secret: secrets.app,
    });
  });

  test('another target is refused, a client error with its own code; the reason names where to bind it', () => {
    const released = releaseSecret(KIND, 'app', 'https://attacker.example/hooks', resolve, 'acme');
    expect(released).toEqual({
      ok: false,
      outcome: {
        kind: 'unbound-secret',
        secret: 'signing secret "app"',
        target: 'https://attacker.example:443',
        hint: 'If it is trusted, add it to "targets" in SECRET_APP',
      },
    });
    const c = classify((released as { outcome: Parameters<typeof classify>[0] }).outcome);
    expect(c).toMatchObject({ class: 'client', retryable: false, code: 'secret-not-bound' });
    expect(c.reason).toBe(
      'the worker\'s signing secret "app" is not bound to https://attacker.example:443: a secret goes only to the targets its configuration lists, so nothing was sent. If it is trusted, add it to "targets" in SECRET_APP',
    );
  });

  test('an unknown name and a broken configuration are invalid targets, naming where the worker looks', () => {
    expect(releaseSecret(KIND, 'nope', 'https://ingest.example.com', resolve, 'acme')).toEqual({
      ok: false,
      outcome: { kind: 'invalid-target', message: 'this worker has no signing secret named "nope" (set SECRET_NOPE)' },
    });
    const broken = releaseSecret(
      KIND,
      'app',
      'https://ingest.example.com',
      () => {
        throw new Error('SECRET_APP: must be JSON');
      },
      'acme',
    );
    expect(broken).toEqual({
      ok: false,
      outcome: { kind: 'invalid-target', message: 'the worker\'s signing secret "app" is misconfigured: SECRET_APP: must be JSON' },
    });
  });

  test('a binding the resolver hands over unchecked is checked here: a bad entry matches nothing', () => {
    const released = releaseSecret(
      KIND,
      'app',
      'https://ingest.example.com',
      () => ({ password: 'p', targets: ['https://ingest.example.com/path'], tenants: ['acme'] }),
      'acme',
    );
    expect(released).toMatchObject({
      ok: false,
      outcome: { kind: 'invalid-target', message: expect.stringContaining('"targets": entry 1') },
    });
  });

  test("another tenant's delivery is refused before its target is even looked at: a client error with its own code, naming the variable, not the secret's tenants", () => {
    const released = releaseSecret(KIND, 'app', 'https://ingest.example.com/hooks', resolve, 'globex');
    expect(released).toEqual({
      ok: false,
      outcome: {
        kind: 'foreign-secret',
        secret: 'signing secret "app"',
        tenant: 'globex',
        hint: 'If tenant "globex" may use it, add it to "tenants" in SECRET_APP',
      },
    });
    const c = classify((released as { outcome: Parameters<typeof classify>[0] }).outcome);
    expect(c).toMatchObject({ class: 'client', retryable: false, code: 'secret-not-for-tenant' });
    expect(c.reason).toBe(
      'the worker\'s signing secret "app" is not for tenant globex: a secret serves only the tenants its configuration lists, so nothing was sent. If tenant "globex" may use it, add it to "tenants" in SECRET_APP',
    );
    expect(c.reason).not.toContain('"acme"');
  });

  test('"*" serves every tenant; a secret whose tenants are missing (a resolver of the application\'s own) serves none', () => {
    for (const tenant of ['acme', 'globex'])
      expect(releaseSecret(KIND, 'shared', 'https://ingest.example.com', resolve, tenant).ok).toBe(true);
    const untenanted = releaseSecret(
      KIND,
      'old',
      'https://ingest.example.com',
      () => ({ password: 'p', targets: ['https://ingest.example.com'] }),
      'acme',
    );
    expect(untenanted).toMatchObject({
      ok: false,
      outcome: { kind: 'invalid-target', message: expect.stringContaining('"tenants" is required') },
    });
  });
});

describe('parseTenants: who may use a secret, said explicitly', () => {
  test('tenant ids, or "*" alone for every tenant', () => {
    expect(parseTenants(['acme', 'globex'], MQTT_CREDENTIAL)).toEqual(['acme', 'globex']);
    expect(parseTenants(['*'], MQTT_CREDENTIAL)).toBe('*');
  });

  test('required and not empty; "*" only alone; each entry a tenant id', () => {
    const required =
      '"tenants" is required: the tenants whose deliveries may use this MQTT credential, e.g. "tenants": ["acme"], or ["*"] for every tenant';
    expect(() => parseTenants(undefined, MQTT_CREDENTIAL)).toThrow(required);
    expect(() => parseTenants([], MQTT_CREDENTIAL)).toThrow(required);
    expect(() => parseTenants('*', MQTT_CREDENTIAL)).toThrow('"tenants" must be a list of tenant ids');
    expect(() => parseTenants(['*', 'acme'], MQTT_CREDENTIAL)).toThrow('"*" stands for every tenant: give it alone');
    expect(() => parseTenants(['acme', 'a/b', 7, ''], MQTT_CREDENTIAL)).toThrow('"tenants": entry 2, 3, 4 must be a tenant id');
  });
});
