import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { AesGcmPayloadCodec, CIPHER, ENCRYPTED_ENCODING, KEY_ID_METADATA } from '../../src/encryption/codec';
import { startCodecServer, type CodecServer } from '../../src/encryption/codec-server';
import { parseKeyRing } from '../../src/encryption/keys';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../src/demo/flaky-endpoint';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { freePort } from '../support/ports';
import { startHarness } from '../support/temporal';

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
    await expect(codec.decode([other!])).rejects.toThrow('a payload is encrypted with key id "k9", which is not among this process\'s keys (k2, k1)');
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
  const asJson = (p: Payload) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  });
  const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers }, body: JSON.stringify(body) });

  beforeAll(async () => {
    server = await startCodecServer({ codec, port: 0, corsOrigins: [UI], authorization: 'Bearer operators-only' });
  });
  afterAll(() => server?.close());

  test('decodes what the workers encrypted, for the UI, and encodes', async () => {
    const [encrypted] = await codec.encode([payloadOf({ body: 'hello device' })]);
    const res = await post('/decode', { payloads: [asJson(encrypted!)] }, { authorization: 'Bearer operators-only', origin: UI });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(UI);
    const { payloads } = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
    expect(JSON.parse(Buffer.from(payloads[0]!.data, 'base64').toString())).toEqual({ body: 'hello device' });

    const encoded = (await (await post('/encode', { payloads: payloads }, { authorization: 'Bearer operators-only' })).json()) as { payloads: { metadata: Record<string, string> }[] };
    expect(Buffer.from(encoded.payloads[0]!.metadata[KEY_ID_METADATA]!, 'base64').toString()).toBe('k2');
  });

  test("answers the UI's CORS preflight for its origin only", async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/decode`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace,authorization' } });
    const ok = await preflight(UI);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    expect(ok.headers.get('access-control-allow-headers')).toContain('X-Namespace');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    const other = await preflight('https://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('refuses a request without the authorization it demands, and bad bodies', async () => {
    expect((await post('/decode', { payloads: [] })).status).toBe(401);
    expect((await post('/decode', { payloads: [] }, { authorization: 'Bearer guess' })).status).toBe(401);
    expect((await post('/decode', { nope: 1 }, { authorization: 'Bearer operators-only' })).status).toBe(400);
    const [foreign] = await new AesGcmPayloadCodec(parseKeyRing(`k9:${key(9)}`)).encode([payloadOf('x')]);
    const res = await post('/decode', { payloads: [asJson(foreign!)] }, { authorization: 'Bearer operators-only' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain('key id "k9"');
  });
});

describe("what Temporal stores (a dev server's SQLite database)", () => {
  let server: DevServer;
  let endpoint: FlakyEndpoint;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'redeliver-encryption-'));
    [server, endpoint] = await Promise.all([
      startDevServer({ port: await freePort(), uiPort: null, dbFile: path.join(dir, 'temporal.db'), logFile: path.join(dir, 'temporal.log') }),
      startFlakyEndpoint(),
    ]);
  }, 90_000);
  afterAll(async () => {
    await endpoint?.close();
    await server?.stop();
  });

  /** Delivers one message carrying three secrets (body, credential header, token in the URL), after one failed attempt. */
  async function deliverSecrets(keys?: typeof RING) {
    const secrets = { body: `reading-${randomUUID()}`, header: `token-${randomUUID()}`, url: `urlkey-${randomUUID()}` };
    const h = await startHarness(server.address, keys ? { encryptionKeys: keys } : {});
    try {
      const handle = await h.redeliver.submit({
        kind: 'event',
        tenant: 'acme',
        device: 'meter-7',
        messageId: randomUUID(),
        target: { url: `${endpoint.url}/in?fail=1&status=503&apikey=${secrets.url}`, headers: { authorization: `Bearer ${secrets.header}` } },
        payload: { reading: secrets.body },
      });
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'delivered', attempts: 2 });
      // the endpoint got the real thing
      const got = endpoint.received.filter((r) => r.body.includes(secrets.body));
      expect(got.map((r) => r.headers.authorization)).toEqual([`Bearer ${secrets.header}`, `Bearer ${secrets.header}`]);
      // the raw history, as the server returns it: nothing decoded on the way
      const raw = await h.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId: handle.deliveryId } });
      const described = await h.client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: handle.deliveryId } });
      // a client with the keys reads everything back
      const status = await handle.status();
      return { secrets, result, status, rawHistory: JSON.stringify(raw.toJSON()), rawDescription: JSON.stringify(described.toJSON()) };
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
    const history = JSON.parse(rawHistory) as { history: { events: { activityTaskFailedEventAttributes?: { failure: { message: string; encodedAttributes?: unknown } } }[] } };
    const failed = history.history.events.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!.failure;
    expect(failed.message).toBe('Encoded failure');
    expect(failed.encodedAttributes).toBeDefined();
    // the workflow's input (the delivery: message, target, headers) and its result are encrypted payloads
    const events = (history.history.events as Record<string, { input?: { payloads: Payload[] }; result?: { payloads: Payload[] } }>[]);
    const started = events.find((e) => e.workflowExecutionStartedEventAttributes)!.workflowExecutionStartedEventAttributes!;
    const completed = events.find((e) => e.workflowExecutionCompletedEventAttributes)!.workflowExecutionCompletedEventAttributes!;
    for (const p of [started.input!.payloads[0]!, completed.result!.payloads[0]!]) {
      expect(Buffer.from(p.metadata!.encoding as unknown as string, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    }
    // and whoever holds the keys reads it all back: the input, the memo behind status()
    const input = Buffer.from(started.input!.payloads[0]!.data as unknown as string, 'base64');
    const [decoded] = await new AesGcmPayloadCodec(RING).decode([{ metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from('k2') }, data: input }]);
    const { delivery } = defaultPayloadConverter.fromPayload(decoded!) as { delivery: { body: string; target: { url: string; headers: Record<string, string> } } };
    expect(delivery.body).toContain(secrets.body);
    expect(delivery.target.headers.authorization).toBe(`Bearer ${secrets.header}`);
    expect(delivery.target.url).toContain(secrets.url);
    expect(result.reason).toContain('HTTP 202');
    expect(status).toMatchObject({ state: 'delivered', tenant: 'acme', device: 'meter-7' });

    await server.stop(); // flushes SQLite
    const db = database();
    expect(db.length).toBeGreaterThan(10_000);
    for (const secret of Object.values(secrets)) expect(db.includes(secret)).toBe(false);
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
