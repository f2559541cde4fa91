import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { Redeliver } from '../../../src/client/index';
import { AesGcmPayloadCodec, CIPHER, ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../../../src/encryption/codec';
import { startCodecServer, type CodecServer } from '../../../src/encryption/codec-server';
import { keylessDataConverter } from '../../../src/encryption/data-converter';
import { parseKeyRing } from '../../../src/encryption/keys';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../../src/demo/flaky-endpoint';
import { startDevServer, type DevServer } from '../../../src/dev/dev-server';
import { buildProgram } from '../../../src/cli/main';
import { codecServerSettingsFromEnv } from '../../../src/config/codec-server';
import { CLI, runCli, type CliRun } from '../../support/cli';
import { freePort } from '../../support/ports';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

// Payload encryption: message bodies and target credentials never reach Temporal's database in plain text.

const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');
const RING = parseKeyRing(`k2:${key(2)},k1:${key(1)}`);
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('utf8');
const payloadOf = (value: unknown) => defaultPayloadConverter.toPayload(value)!;

describe('the AES-GCM payload codec', () => {
  const codec = new AesGcmPayloadCodec(RING);

  test('encrypts the whole payload with the current key, naming the key in the metadata', async () => {
    const plain = payloadOf({ temperature: 21.5, secret: 'sensor-passphrase' });
    const [encrypted] = await codec.encode([plain]);
    expect(text(encrypted!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(encrypted!.metadata![KEY_ID_METADATA])).toBe('k2');
    expect(text(encrypted!.metadata!['encryption-cipher'])).toBe(CIPHER);
    expect(text(encrypted!.data)).not.toContain('sensor-passphrase');
    expect(text(encrypted!.data)).not.toContain('json/plain');
    const [decoded] = await codec.decode([encrypted!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ temperature: 21.5, secret: 'sensor-passphrase' });
  });

  test('a fresh IV every time: the same payload never encrypts to the same bytes', async () => {
    const [a, b] = await codec.encode([payloadOf('same'), payloadOf('same')]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  test('rotation: a payload encrypted with a key that is no longer current still decrypts by its key id', async () => {
    const [old] = await new AesGcmPayloadCodec(parseKeyRing(`k1:${key(1)}`)).encode([payloadOf('from last year')]);
    const [decoded] = await codec.decode([old!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toBe('from last year');
  });

  test('a payload of an unknown key, or one altered, is refused with what went wrong', async () => {
    const [other] = await new AesGcmPayloadCodec(parseKeyRing(`k9:${key(9)}`)).encode([payloadOf('x')]);
    await expect(codec.decode([other!])).rejects.toThrow(
      'a payload is encrypted with key id "k9", which is not among this process\'s keys (k2, k1)',
    );
    const [mine] = await codec.encode([payloadOf('x')]);
    const altered: Payload = { ...mine!, data: Buffer.from(mine!.data!).map((b, i) => (i === 20 ? b ^ 1 : b)) };
    await expect(codec.decode([altered])).rejects.toThrow('does not decrypt: altered, or encrypted with another key of that id');
  });

  test('payloads stored before encryption was switched on pass through unchanged', async () => {
    const plain = payloadOf({ old: true });
    expect(await codec.decode([plain])).toEqual([plain]);
  });
});

describe('the codec server', () => {
  let server: CodecServer;
  const codec = new AesGcmPayloadCodec(RING);
  const UI = 'http://localhost:8080';
  const TOKEN = 'operators-only-0123456789abcdef';
  const asJson = (p: Payload) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  });
  const port = () => new URL(server.url).port;
  /** A raw request: fetch() would not let a test choose the Host header, which is what DNS rebinding changes. */
  const call = (path: string, headers: Record<string, string> = {}, body?: unknown, method = 'POST') =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: port(),
          path,
          method,
          headers: { host: `localhost:${port()}`, 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
        },
      );
      req.once('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  const secret = async () => ({ payloads: [asJson((await codec.encode([payloadOf({ body: 'hello device' })]))[0]!)] });
  const decoded = (text: string) => {
    const { payloads } = JSON.parse(text) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
    return JSON.parse(Buffer.from(payloads[0]!.data, 'base64').toString()) as unknown;
  };

  beforeAll(async () => {
    server = await startCodecServer({ codec, port: 0, corsOrigins: [UI], token: TOKEN, allowedHosts: ['codec.example.com'] });
  });
  afterAll(() => server?.close());

  test('decodes for the bearer of the token: as an Authorization header, or as the first path segment (how the UI sends it)', async () => {
    const withHeader = await call('/decode', { authorization: `Bearer ${TOKEN}` }, await secret());
    expect(withHeader.status).toBe(200);
    expect(decoded(withHeader.text)).toEqual({ body: 'hello device' });
    const inPath = await call(`/${TOKEN}/decode`, { origin: UI }, await secret());
    expect(inPath.status).toBe(200);
    expect(inPath.headers['access-control-allow-origin']).toBe(UI);
    expect(decoded(inPath.text)).toEqual({ body: 'hello device' });

    const { payloads } = JSON.parse(inPath.text) as { payloads: unknown[] };
    const encoded = await call(`/${TOKEN}/encode`, {}, { payloads });
    expect(encoded.status).toBe(200);
    const keyId = (JSON.parse(encoded.text) as { payloads: { metadata: Record<string, string> }[] }).payloads[0]!.metadata[
      KEY_ID_METADATA
    ]!;
    expect(Buffer.from(keyId, 'base64').toString()).toBe('k2');
  });

  test('without the token: 401, and nothing is decrypted', async () => {
    for (const [path, headers] of [
      ['/decode', {}],
      ['/decode', { authorization: 'Bearer guess' }],
      ['/decode', { authorization: TOKEN }],
      ['/guess/decode', {}],
      [`/${TOKEN}x/decode`, {}],
      ['/encode', {}],
    ] as [string, Record<string, string>][]) {
      const res = await call(path, headers, await secret());
      expect([path, res.status]).toEqual([path, 401]);
      expect(res.text).not.toContain(Buffer.from('hello device').toString('base64'));
      expect(res.text).toMatch(/REDELIVER_CODEC_TOKEN/);
    }
  });

  test("a request addressed to a name that is not the server's (DNS rebinding) is refused, token or not", async () => {
    for (const host of [
      `attacker.example:${port()}`,
      'attacker.example',
      `localhost.attacker.example:${port()}`,
      `127.0.0.1.nip.io:${port()}`,
    ]) {
      const res = await call(`/${TOKEN}/decode`, { host }, await secret());
      expect([host, res.status]).toEqual([host, 403]);
      expect(res.text).toContain('Host');
      expect(res.text).not.toContain(Buffer.from('hello device').toString('base64'));
    }
    // the server's own names: loopback, and the names configured for it (a proxy's)
    for (const host of [`localhost:${port()}`, `127.0.0.1:${port()}`, `[::1]:${port()}`, 'codec.example.com', `CODEC.example.com:443`]) {
      expect([host, (await call(`/${TOKEN}/decode`, { host }, await secret())).status]).toEqual([host, 200]);
    }
  });

  test("a foreign Origin is refused; the UI's gets CORS, and its preflight an answer", async () => {
    const foreign = await call(`/${TOKEN}/decode`, { origin: 'https://evil.example' }, await secret());
    expect(foreign.status).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    expect(foreign.text).not.toContain(Buffer.from('hello device').toString('base64'));
    expect((await call(`/${TOKEN}/decode`, { origin: 'null' }, await secret())).status).toBe(403);

    const preflight = (origin: string) =>
      call(
        `/${TOKEN}/decode`,
        { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace,authorization' },
        undefined,
        'OPTIONS',
      );
    const ok = await preflight(UI);
    expect(ok.status).toBe(204);
    expect(ok.headers['access-control-allow-origin']).toBe(UI);
    expect(ok.headers['access-control-allow-headers']).toContain('X-Namespace');
    expect(ok.headers['access-control-allow-credentials']).toBe('true');
    const other = await preflight('https://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('bad bodies and payloads of another key are 400', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await call('/decode', auth, { nope: 1 })).status).toBe(400);
    const [foreign] = await new AesGcmPayloadCodec(parseKeyRing(`k9:${key(9)}`)).encode([payloadOf('x')]);
    const res = await call('/decode', auth, { payloads: [asJson(foreign!)] });
    expect(res.status).toBe(400);
    expect((JSON.parse(res.text) as { message: string }).message).toContain('key id "k9"');
  });

  test('listens on loopback unless told otherwise, and will not start without a token or with a wildcard origin', async () => {
    const other = await startCodecServer({ codec, port: 0, token: TOKEN });
    try {
      expect((other.server.address() as AddressInfo).address).toBe('127.0.0.1');
    } finally {
      await other.close();
    }
    await expect(startCodecServer({ codec, port: 0, token: '' })).rejects.toThrow(/token/);
    await expect(startCodecServer({ codec, port: 0, token: 'short' })).rejects.toThrow(/token/);
    await expect(startCodecServer({ codec, port: 0, token: TOKEN, corsOrigins: ['*'] })).rejects.toThrow(/origin/);
  });

  test('its settings: every bad variable named at once, flags win over variables', () => {
    const env = { REDELIVER_ENCRYPTION_KEYS: `k2:${key(2)}`, REDELIVER_CODEC_TOKEN: TOKEN };
    expect(() =>
      codecServerSettingsFromEnv({
        ...env,
        REDELIVER_CODEC_CORS_ORIGINS: '*, http://localhost:8080/path',
        REDELIVER_CODEC_ALLOWED_HOSTS: 'https://codec.example.com',
      }),
    ).toThrow(
      'invalid configuration:\n' +
        '  - REDELIVER_CODEC_CORS_ORIGINS: "*" is not an origin: the UI\'s scheme, host and port, e.g. http://localhost:8080\n' +
        '  - REDELIVER_CODEC_CORS_ORIGINS: "http://localhost:8080/path" is not an origin: the UI\'s scheme, host and port, e.g. http://localhost:8080\n' +
        '  - REDELIVER_CODEC_ALLOWED_HOSTS: "https://codec.example.com" is not a host name (no scheme, port or path: codec.example.com)',
    );
    const settings = codecServerSettingsFromEnv(
      { ...env, REDELIVER_CODEC_CORS_ORIGINS: 'http://a:1' },
      { token: 'from-the-flag-0123456789', corsOrigin: ['http://b:2'], allowedHost: ['codec.example.com'] },
    );
    expect(settings).toMatchObject({ token: 'from-the-flag-0123456789', corsOrigins: ['http://b:2'], allowedHosts: ['codec.example.com'] });
    expect(() => codecServerSettingsFromEnv(env, { token: 'short' })).toThrow('--token: must be 16 to 256 letters');
  });

  test('`redeliver codec-server` refuses to start without REDELIVER_CODEC_TOKEN, and listens on 127.0.0.1 by default', async () => {
    const keys = `k2:${key(2)}`;
    const run = await runCliBriefly(['codec-server', '--port', '0'], { REDELIVER_ENCRYPTION_KEYS: keys, REDELIVER_CODEC_TOKEN: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/REDELIVER_CODEC_TOKEN: is not set/);
    const bad = await runCliBriefly(['codec-server', '--port', '0'], {
      REDELIVER_ENCRYPTION_KEYS: keys,
      REDELIVER_CODEC_TOKEN: 'has spaces in it, and is short',
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/REDELIVER_CODEC_TOKEN: must be/);
    const host = buildProgram()
      .commands.find((c) => c.name() === 'codec-server')!
      .options.find((o) => o.long === '--host')!;
    expect(host.defaultValue).toBe('127.0.0.1');
  });
});

describe("what Temporal stores (a dev server's SQLite database)", () => {
  let server: DevServer;
  let endpoint: FlakyEndpoint;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'redeliver-encryption-'));
    [server, endpoint] = await Promise.all([
      startDevServer({
        port: await freePort(),
        uiPort: null,
        dbFile: path.join(dir, 'temporal.db'),
        logFile: path.join(dir, 'temporal.log'),
      }),
      startFlakyEndpoint(),
    ]);
  }, 90_000);
  afterAll(async () => {
    await endpoint?.close();
    await server?.stop();
  });

  /** Delivers one message carrying three secrets (body, credential header, token in the URL), after one failed attempt. */
  async function deliverSecrets(keys?: typeof RING, singleSubmit: 'standalone' | 'workflow' = 'workflow') {
    const secrets = { body: `reading-${randomUUID()}`, header: `token-${randomUUID()}`, url: `urlkey-${randomUUID()}` };
    const h = await startHarness(server.address, keys ? { encryptionKeys: keys } : {});
    try {
      // the workflow path: the failed first attempt is an activity of the delivery's history
      const redeliver = new Redeliver(h.client, { taskQueue: h.taskQueue, singleSubmit });
      const handle = await redeliver.submit({
        kind: 'event',
        tenant: 'acme',
        device: 'meter-7',
        messageId: randomUUID(),
        target: {
          url: `${endpoint.url}/in?fail=1&status=503&apikey=${secrets.url}`,
          headers: { authorization: `Bearer ${secrets.header}` },
        },
        payload: { reading: secrets.body },
      });
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'delivered', attempts: 2 });
      // the endpoint got the real thing
      const got = endpoint.received.filter((r) => r.body.includes(secrets.body));
      expect(got.map((r) => r.headers.authorization)).toEqual([`Bearer ${secrets.header}`, `Bearer ${secrets.header}`]);
      // the raw history, as the server returns it: nothing decoded on the way
      const raw = await h.client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId: handle.deliveryId },
      });
      const described = await h.client.workflowService.describeWorkflowExecution({
        namespace: 'default',
        execution: { workflowId: handle.deliveryId },
      });
      // a single submit's standalone first attempt, as the server returns it (none on the workflow path)
      const firstAttempt = await h.client.workflowService
        .describeActivityExecution({ namespace: 'default', activityId: handle.deliveryId, includeInput: true, includeOutcome: true })
        .then((a) => JSON.stringify(a.toJSON()))
        .catch(() => null);
      // a client with the keys reads everything back
      const status = await handle.status();
      const rawHistory = JSON.stringify(raw.toJSON());
      return { secrets, result, status, rawHistory, rawDescription: JSON.stringify(described.toJSON()), firstAttempt };
    } finally {
      await h.stop();
    }
  }

  /** The database files as bytes, with the server's writes flushed (WAL included). */
  function database(): string {
    return readdirSync(dir)
      .filter((f) => f.startsWith('temporal.db'))
      .map((f) => readFileSync(path.join(dir, f)).toString('latin1'))
      .join('\n');
  }

  /** Every string in a proto3 JSON document, and what each base64 one decodes to (payload bytes are base64 there). */
  const readable = (json: string): string => {
    const out: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') out.push(v, Buffer.from(v, 'base64').toString('latin1'));
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(JSON.parse(json));
    return out.join('\n');
  };
  const anywhere = (json: string, needle: string) => readable(json).includes(needle);

  test('without keys the secrets are there in plain text (the check below can fail)', async () => {
    const { secrets, rawHistory } = await deliverSecrets();
    expect(anywhere(rawHistory, secrets.body)).toBe(true);
    expect(anywhere(rawHistory, secrets.header)).toBe(true);
    expect(anywhere(rawHistory, secrets.url)).toBe(true);
    await waitForDatabase(() => database().includes(secrets.body));
  });

  test('with keys, no body, credential or URL token is in the history, the memo, the summaries or the database', async () => {
    const { secrets, result, status, rawHistory, rawDescription } = await deliverSecrets(RING);
    for (const secret of Object.values(secrets)) {
      expect(anywhere(rawHistory, secret)).toBe(false);
      expect(anywhere(rawDescription, secret)).toBe(false);
    }
    // the failed attempt's failure: its message and stack travel encrypted too
    const history = JSON.parse(rawHistory) as {
      history: { events: { activityTaskFailedEventAttributes?: { failure: { message: string; encodedAttributes?: unknown } } }[] };
    };
    const failed = history.history.events.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!.failure;
    expect(failed.message).toBe('Encoded failure');
    expect(failed.encodedAttributes).toBeDefined();
    // the workflow's input (the delivery: message, target, headers) and its result are encrypted payloads
    const events = history.history.events as Record<string, { input?: { payloads: Payload[] }; result?: { payloads: Payload[] } }>[];
    const started = events.find((e) => e.workflowExecutionStartedEventAttributes)!.workflowExecutionStartedEventAttributes!;
    const completed = events.find((e) => e.workflowExecutionCompletedEventAttributes)!.workflowExecutionCompletedEventAttributes!;
    for (const p of [started.input!.payloads[0]!, completed.result!.payloads[0]!]) {
      expect(Buffer.from(p.metadata!.encoding as unknown as string, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    }
    // and whoever holds the keys reads it all back: the input, the memo behind status()
    const input = Buffer.from(started.input!.payloads[0]!.data as unknown as string, 'base64');
    const [decoded] = await new AesGcmPayloadCodec(RING).decode([
      { metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from('k2') }, data: input },
    ]);
    const { delivery } = defaultPayloadConverter.fromPayload(decoded!) as {
      delivery: { body: string; target: { url: string; headers: Record<string, string> } };
    };
    expect(delivery.body).toContain(secrets.body);
    expect(delivery.target.headers.authorization).toBe(`Bearer ${secrets.header}`);
    expect(delivery.target.url).toContain(secrets.url);
    expect(result.reason).toContain('HTTP 202');
    expect(status).toMatchObject({ state: 'delivered', tenant: 'acme', device: 'meter-7' });

    // a single submit's standalone first attempt (docs/batches.md, "A single submit"): its input encrypted too
    const standalone = await deliverSecrets(RING, 'standalone');
    expect(standalone.firstAttempt).not.toBeNull();
    const stored = JSON.parse(standalone.firstAttempt!) as { input: { payloads: Payload[] } };
    expect(Buffer.from(stored.input.payloads[0]!.metadata!.encoding as unknown as string, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    for (const secret of Object.values(standalone.secrets)) {
      for (const raw of [standalone.firstAttempt!, standalone.rawHistory, standalone.rawDescription])
        expect(anywhere(raw, secret)).toBe(false);
    }

    await server.stop(); // flushes SQLite
    const db = database();
    expect(db.length).toBeGreaterThan(10_000);
    for (const secret of [...Object.values(secrets), ...Object.values(standalone.secrets)]) expect(db.includes(secret)).toBe(false);
  });
});

/** SQLite may hold the last writes in its WAL for a moment; the first test waits for them to show. */
async function waitForDatabase(found: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!found()) {
    if (Date.now() > deadline) throw new Error('the plain-text delivery never showed in the database file');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the CLI, stopping it after 15 s: a command that should refuse to start must not be left serving if it starts. */
function runCliBriefly(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGTERM'), 15_000);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('encryption configured on one side only', () => {
  let keyed: Harness;
  let endpoint: FlakyEndpoint;
  const conn = () => ['--address', testAddress(), '--task-queue', keyed.taskQueue];
  const keylessEnv = { REDELIVER_ENCRYPTION_KEYS: '', REDELIVER_ENCRYPTION_KEYS_FILE: '' };

  beforeAll(async () => {
    [keyed, endpoint] = await Promise.all([startHarness(testAddress(), { encryptionKeys: RING }), startFlakyEndpoint()]);
  });
  afterAll(async () => {
    await keyed?.stop();
    await endpoint?.close();
  });

  test('a worker with keys ends a delivery submitted without them, naming the variable, and sends nothing', async () => {
    const connection = await connectClient({ address: testAddress() });
    try {
      const keyless = new Redeliver(new Client({ connection }), { taskQueue: keyed.taskQueue });
      const handle = await keyless.submit({
        kind: 'event',
        tenant: 'acme',
        device: 'plain-1',
        messageId: randomUUID(),
        payload: { reading: 'in plain text' },
        target: { url: `${endpoint.url}/plain`, headers: { authorization: 'Bearer plain-token' } },
      });
      const result = await keyed.redeliver.getHandle(handle.deliveryId).result();
      expect(result).toMatchObject({ outcome: 'rejected', lastError: { class: 'client', code: 'unencrypted-submission' } });
      expect(result.reason).toMatch(/submitted without encryption, but this worker has REDELIVER_ENCRYPTION_KEYS set/);
      expect(endpoint.received.filter((r) => r.path === '/plain')).toEqual([]);
    } finally {
      await connection.close();
    }
  });

  test('a client without keys resubmitting an encrypted delivery is told it cannot compare, not that the message differs', async () => {
    const input = {
      kind: 'event' as const,
      tenant: 'acme',
      device: 'sealed-4',
      messageId: randomUUID(),
      payload: { n: 4 },
      target: `${endpoint.url}/ok`,
    };
    await (await keyed.redeliver.submit(input)).result();
    const connection = await connectClient({ address: testAddress() });
    try {
      const keyless = new Redeliver(new Client({ connection, dataConverter: keylessDataConverter() }), { taskQueue: keyed.taskQueue });
      await expect(keyless.submit(input)).rejects.toThrow(
        /REDELIVER_ENCRYPTION_KEYS: is not set, and delivery\/acme\/sealed-4\/.* exists encrypted/,
      );
    } finally {
      await connection.close();
    }
  });

  test('a worker without keys sends nothing of an encrypted delivery: its workflow task fails, naming the encoding', async () => {
    const keyless = await startHarness(testAddress());
    try {
      const sealed = new Redeliver(keyed.client, { taskQueue: keyless.taskQueue, singleSubmit: 'workflow' });
      const handle = await sealed.submit({
        kind: 'event',
        tenant: 'acme',
        device: 'sealed-0',
        payload: { n: 1 },
        target: `${endpoint.url}/sealed`,
      });
      const taskFailure = async () => (await handle.workflow.fetchHistory()).events?.find((e) => e.workflowTaskFailedEventAttributes);
      const failed = await waitFor(
        async () => (await taskFailure())?.workflowTaskFailedEventAttributes?.failure?.message,
        (message) => message !== undefined,
        15_000,
        'a failed workflow task',
      );
      expect(failed).toContain('Unknown encoding: binary/encrypted');
      expect(endpoint.received.filter((r) => r.path === '/sealed')).toEqual([]);
      await handle.workflow.terminate('test over');
      // a single submit's standalone first attempt: its activity task fails the same way, retried, nothing sent
      const first = await new Redeliver(keyed.client, { taskQueue: keyless.taskQueue, singleSubmit: 'standalone' }).submit({
        kind: 'event',
        tenant: 'acme',
        device: 'sealed-0',
        payload: { n: 2 },
        target: `${endpoint.url}/sealed`,
      });
      const activity = keyed.client.activity.getHandle(first.deliveryId);
      const lastFailure = await waitFor(
        async () => String(await (await activity.describe({ includeLastFailure: true })).getLastFailure()),
        (message) => message !== 'undefined',
        15_000,
        'a failed first attempt',
      );
      expect(lastFailure).toContain('Unknown encoding: binary/encrypted');
      expect(endpoint.received.filter((r) => r.path === '/sealed')).toEqual([]);
      await activity.terminate('test over');
    } finally {
      await keyless.stop();
    }
  });

  test('`list`, `status` and `dead-letters` without keys show what the search attributes say, the rest marked encrypted', async () => {
    const submit = (device: string, target: string) =>
      keyed.redeliver.submit({
        kind: 'event',
        tenant: 'sealed',
        device,
        payload: { secret: 'hush-hush' },
        target: `${endpoint.url}${target}`,
      });
    const [delivered, rejected, waiting] = [
      await submit('sealed-1', '/ok'),
      await submit('sealed-2', '/gone?fail=9&status=404'),
      await submit('sealed-3', '/down?fail=99&status=503'),
    ];
    await Promise.all([delivered.result(), rejected.result()]);
    await waitFor(
      () => waiting.status(),
      (s) => s.state === 'waiting',
      15_000,
      'waiting',
    );
    await waitFor(
      () => keyed.redeliver.count({ tenant: 'sealed' }),
      (n) => n === 3,
      15_000,
      'visibility',
    );
    try {
      const list = await runCli(['list', '--tenant', 'sealed', ...conn()], keylessEnv);
      expect(list.stderr).toBe('');
      expect(list.code).toBe(0);
      for (const [handle, state] of [
        [delivered, 'delivered'],
        [rejected, 'rejected'],
        [waiting, 'waiting'],
      ] as const) {
        expect(list.stdout).toMatch(new RegExp(`^${state} +event .*${handle.deliveryId}$`, 'm'));
      }
      expect(list.stdout).toMatch(/encrypted.*REDELIVER_ENCRYPTION_KEYS/);
      const json = await runCli(['list', '--tenant', 'sealed', '--json', ...conn()], keylessEnv);
      expect(json.code).toBe(0);
      expect(
        (JSON.parse(json.stdout) as { deliveryId: string; state: string; encrypted?: boolean }[])
          .map((r) => [r.deliveryId, r.state, r.encrypted])
          .sort(),
      ).toEqual(
        [
          [delivered.deliveryId, 'delivered', true],
          [rejected.deliveryId, 'rejected', true],
          [waiting.deliveryId, 'waiting', true],
        ].sort(),
      );

      for (const [handle, state] of [
        [rejected, 'rejected'],
        [waiting, 'waiting'],
      ] as const) {
        const status = await runCli(['status', handle.deliveryId, '--json', ...conn()], keylessEnv);
        expect(status.code).toBe(0);
        expect(JSON.parse(status.stdout)).toMatchObject({
          deliveryId: handle.deliveryId,
          state,
          kind: 'event',
          tenant: 'sealed',
          endpoint: new URL(endpoint.url).host,
          encrypted: { keyId: 'k2' },
        });
        const words = await runCli(['status', handle.deliveryId, ...conn()], keylessEnv);
        expect(words.stdout).toMatch(new RegExp(`state +${state}`));
        expect(words.stdout).toMatch(/encrypted with key k2.*REDELIVER_ENCRYPTION_KEYS/);
      }
      const letters = await runCli(['dead-letters', '--tenant', 'sealed', ...conn()], keylessEnv);
      expect(letters.code).toBe(0);
      expect(letters.stdout).toContain(rejected.deliveryId);
      const show = await runCli(['dead-letters', 'show', rejected.deliveryId, ...conn()], keylessEnv);
      expect(show.stderr).toBe('');
      expect(show.code).toBe(0);
      expect(show.stdout).toMatch(new RegExp(`^${rejected.deliveryId}: rejected after 1 attempt`));
      expect(show.stdout).toMatch(/encrypted with key k2.*REDELIVER_ENCRYPTION_KEYS/);
      expect(show.stdout).not.toContain('hush-hush');
      // a single submit delivered at once by its standalone first attempt: only its encrypted result says so
      const standalone = new Redeliver(keyed.client, { taskQueue: keyed.taskQueue, singleSubmit: 'standalone' });
      const single = await standalone.submit({
        kind: 'event',
        tenant: 'sealed-single',
        device: 's',
        payload: { n: 1 },
        target: `${endpoint.url}/ok`,
      });
      await single.result();
      const unread = await runCli(['status', single.deliveryId, ...conn()], keylessEnv);
      expect(unread.code).not.toBe(0);
      expect(unread.stderr).toMatch(/REDELIVER_ENCRYPTION_KEYS: is not set, and .* made its first attempt encrypted/);
    } finally {
      await waiting.cancel();
    }
  });
});
