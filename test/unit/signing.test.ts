import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { batchRequestId, planSends } from '../../src/activities/batch-requests';
import { classify } from '../../src/classify';
import type { HttpRequest } from '../../src/transports/http';
import { signingSecretProblems, signingSecretsFromEnvironment, signRequest, webhookHeaders } from '../../src/transports/signing';
import { validateDelivery } from '../../src/validation/delivery';

// Standard Webhooks signatures, checked by the `standardwebhooks` package: a verifier written by others.

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const OLD = secret();
const NEW = secret();
const BODY = '{"temperature":21.5,"note":"größer"}';
const now = () => Math.floor(Date.now() / 1000);

const verifies = (key: string, headers: Record<string, string>, body = BODY) => {
  try {
    new Webhook(key).verify(body, headers);
    return true;
  } catch {
    return false;
  }
};

describe('webhookHeaders', () => {
  test('each secret of a rotation verifies on its own; another secret, another body or another id does not', () => {
    const headers = webhookHeaders([OLD, NEW], 'msg-42', now(), BODY);
    expect(headers['webhook-id']).toBe('msg-42');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    expect(verifies(OLD, headers)).toBe(true);
    expect(verifies(NEW, headers)).toBe(true);
    expect(verifies(secret(), headers)).toBe(false);
    expect(verifies(NEW, headers, BODY.replace('21.5', '99'))).toBe(false);
    expect(verifies(NEW, { ...headers, 'webhook-id': 'msg-43' })).toBe(false);
  });

  test('a secret without the whsec_ prefix signs as with it', () => {
    const headers = webhookHeaders([NEW.slice('whsec_'.length)], 'm', now(), BODY);
    expect(verifies(NEW, headers)).toBe(true);
  });

  test('an old timestamp is refused by the verifier: the signature is made when the request goes', () => {
    const headers = webhookHeaders([NEW], 'm', now() - 3600, BODY);
    expect(verifies(NEW, headers)).toBe(false);
  });
});

describe('signRequest: the secret is released only for an endpoint it is bound to', () => {
  const request: HttpRequest = {
    url: 'https://ingest.example.com/hooks',
    method: 'POST',
    headers: { a: 'b' },
    body: BODY,
    timeoutMs: 1000,
  };
  const env = {
    REDELIVER_SIGNING_SECRETS_ACME: JSON.stringify({ secrets: [OLD, NEW], endpoints: ['https://ingest.example.com'], tenants: ['acme'] }),
  };
  const resolve = signingSecretsFromEnvironment(env);

  test('a bound endpoint: the request keeps its headers and gains the three', () => {
    const signed = signRequest(request, { secret: 'acme', id: 'msg-1', tenant: 'acme' }, resolve);
    if (!signed.ok) throw new Error('not signed');
    expect(signed.request.headers).toMatchObject({ a: 'b', 'webhook-id': 'msg-1' });
    expect(verifies(OLD, signed.request.headers)).toBe(true);
  });

  test('another endpoint, or a name the worker does not know: nothing is signed, the delivery is rejected', () => {
    const unbound = signRequest(
      { ...request, url: 'https://attacker.example/hooks' },
      { secret: 'acme', id: 'm', tenant: 'acme' },
      resolve,
    );
    expect(unbound.ok).toBe(false);
    const c = classify((unbound as { outcome: Parameters<typeof classify>[0] }).outcome);
    expect(c).toMatchObject({ class: 'client', retryable: false, code: 'secret-not-bound' });
    expect(c.reason).toContain(
      'add it to "endpoints" in REDELIVER_SIGNING_SECRETS_ACME or the file named by REDELIVER_SIGNING_SECRETS_FILE',
    );
    expect(signRequest(request, { secret: 'other', id: 'm', tenant: 'acme' }, resolve)).toEqual({
      ok: false,
      outcome: {
        kind: 'invalid-target',
        message:
          'this worker has no signing secret named "other" (set REDELIVER_SIGNING_SECRETS_OTHER or the file named by REDELIVER_SIGNING_SECRETS_FILE)',
      },
    });
  });

  test("another tenant's delivery naming the secret: nothing is signed, rejected as secret-not-for-tenant naming the variable", () => {
    const foreign = signRequest(request, { secret: 'acme', id: 'm', tenant: 'globex' }, resolve);
    expect(foreign.ok).toBe(false);
    const c = classify((foreign as { outcome: Parameters<typeof classify>[0] }).outcome);
    expect(c).toMatchObject({ class: 'client', retryable: false, code: 'secret-not-for-tenant' });
    expect(c.reason).toContain('add it to "tenants" in REDELIVER_SIGNING_SECRETS_ACME or the file named by REDELIVER_SIGNING_SECRETS_FILE');
    expect(c.reason).not.toContain(OLD.slice('whsec_'.length, 20));
  });

  test("a resolver of the application's own that hands over a bad secret: refused, the secret not quoted", () => {
    const signed = signRequest(request, { secret: 'app', id: 'm', tenant: 'acme' }, () => ({
      secrets: ['short'],
      endpoints: ['https://ingest.example.com'],
      tenants: ['acme'],
    }));
    expect(signed).toMatchObject({ ok: false, outcome: { kind: 'invalid-target' } });
    expect(JSON.stringify(signed)).not.toContain('short"');
  });
});

describe('signingSecretProblems: a worker does not start with a secret it could never use', () => {
  test('each problem names its variable and what is wrong, never the secret', () => {
    const problems = signingSecretProblems({
      REDELIVER_SIGNING_SECRETS_A: JSON.stringify({ secrets: ['whsec_dG9vIHNob3J0'], endpoints: ['https://a.example'], tenants: ['*'] }),
      REDELIVER_SIGNING_SECRETS_B: JSON.stringify({ secrets: [NEW] }),
      REDELIVER_SIGNING_SECRETS_C: 'whsec_not-json',
      REDELIVER_SIGNING_SECRETS_D: JSON.stringify({ secrets: [NEW], endpoints: ['https://d.example/path'], tenants: ['*'] }),
      REDELIVER_SIGNING_SECRETS_E: JSON.stringify({ secrets: [NEW], endpoints: ['https://e.example'], tenants: ['*'] }),
      REDELIVER_SIGNING_SECRETS_F: JSON.stringify({ secrets: [NEW], endpoints: ['https://f.example'] }),
    });
    expect(problems).toEqual([
      {
        variable: 'REDELIVER_SIGNING_SECRETS_A',
        message: '"secrets" entry 1 must be whsec_ and the base64 of 24 to 64 random bytes (openssl rand -base64 32)',
      },
      { variable: 'REDELIVER_SIGNING_SECRETS_B', message: expect.stringContaining('"endpoints" is required') },
      { variable: 'REDELIVER_SIGNING_SECRETS_C', message: expect.stringContaining('must be JSON such as') },
      { variable: 'REDELIVER_SIGNING_SECRETS_D', message: expect.stringContaining('without a path') },
      {
        variable: 'REDELIVER_SIGNING_SECRETS_F',
        message:
          '"tenants" is required: the tenants whose deliveries may use this signing secret, e.g. "tenants": ["acme"], or ["*"] for every tenant',
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain('not-json');
  });
});

describe('a target names its signing secret', () => {
  const input = (target: unknown) => ({ kind: 'event', tenant: 'acme', device: 'd', messageId: 'm-1', target, payload: {} });

  test('kept on the HTTP target; absent when not given (a delivery from before keeps its shape)', () => {
    expect(validateDelivery(input({ url: 'https://ingest.example.com/in', signing: 'acme' })).target).toMatchObject({ signing: 'acme' });
    expect(validateDelivery(input('https://ingest.example.com/in')).target).not.toHaveProperty('signing');
  });

  test('a bad name, or signing on an MQTT target, is refused naming target.signing', () => {
    expect(() => validateDelivery(input({ url: 'https://ingest.example.com/in', signing: 'whsec_abc/def=' }))).toThrow(
      'target.signing: must be a signing secret name',
    );
    expect(() => validateDelivery(input({ url: 'mqtt://hub.example.com', signing: 'acme' }))).toThrow(
      'target.signing: applies to http:// and https:// targets only',
    );
  });

  test("a batch's request to a batched endpoint is signed with its target's secret, its id stable for the same messages", () => {
    const target = (signing?: string) => ({
      url: 'https://ingest.example.com/batch',
      batch: { format: 'ndjson' },
      ...(signing && { signing }),
    });
    const ds = ['a', 'b', 'c'].map((id, i) => validateDelivery({ ...input(target(i < 2 ? 'acme' : undefined)), messageId: id }));
    const sends = planSends(ds, () => true);
    expect(sends.map((s) => s.indexes)).toEqual([[0, 1], [2]]);
    expect(sends[0]!.signing).toEqual({ secret: 'acme', id: batchRequestId([ds[0]!.deliveryId, ds[1]!.deliveryId]), tenant: 'acme' });
    expect(batchRequestId(['a', 'b'])).toBe(batchRequestId(['a', 'b']));
    expect(batchRequestId(['a', 'b'])).not.toBe(batchRequestId(['a', 'c']));
  });

  test("two tenants' batches of the same message ids are two messages: their requests carry different ids", () => {
    const target = { url: 'https://ingest.example.com/batch', batch: { format: 'ndjson' }, signing: 'hooks' };
    const batchOf = (tenant: string) =>
      planSends(
        ['a', 'b'].map((messageId) => validateDelivery({ ...input(target), tenant, messageId })),
        () => true,
      )[0]!.signing!.id;
    expect(batchOf('acme')).not.toBe(batchOf('globex'));
    expect(batchOf('acme')).toBe(batchOf('acme'));
  });
});
