import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { signingSecretsFromEnvironment } from '../../../src/transports/signing';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../support/receiver';
import { startHarness, type Harness } from '../../support/temporal';

/*
 * Signed requests (docs/deliveries.md, "Signed requests"), on the dev server with the production worker: every request
 * to a target naming a signing secret is verified here by the `standardwebhooks` package, the receivers'
 * own verifier; the worker's secrets are rotated under it without a restart.
 */

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const OLD = secret();
const NEW = secret();
/** The worker's environment, read at every request: the tests change it as an operator would. */
const workerEnv: Record<string, string> = {};
let h: Harness;
let receiver: Receiver;
let stranger: Receiver;

beforeAll(async () => {
  [h, receiver, stranger] = await Promise.all([
    startHarness(undefined, { signingSecrets: signingSecretsFromEnvironment(workerEnv) }),
    startReceiver(),
    startReceiver(),
  ]);
  workerEnv.REDELIVER_SIGNING_SECRETS_ACME = JSON.stringify({ secrets: [OLD, NEW], endpoints: [receiver.url], tenants: ['acme'] });
});
afterAll(async () => {
  await h?.stop();
  await Promise.all([receiver?.close(), stranger?.close()]);
});

const verifiedBy = (key: string, r: ReceivedRequest): boolean => {
  try {
    // an NDJSON body is no JSON document: verify the bytes only
    new Webhook(key).verify(r.body, r.headers as Record<string, string>, { jsonParse: false });
    return true;
  } catch {
    return false;
  }
};
const event = (url: string, extra: Partial<DeliveryInput> = {}): DeliveryInput => ({
  kind: 'event',
  tenant: 'acme',
  device: 'signed',
  messageId: randomUUID(),
  target: { url, signing: 'acme' },
  payload: { temperature: 21.5 },
  policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
  ...extra,
});

test("every attempt is signed with each secret of the rotation; the id is the delivery's, the timestamp fresh", async () => {
  receiver.route('/one', ({ nth }) => ({ status: nth === 1 ? 503 : 202 }));
  const input = event(`${receiver.url}/one`);
  const handle = await h.redeliver.submit(input);
  expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });

  const requests = receiver.of(input.messageId!);
  expect(requests).toHaveLength(2);
  // the same for every attempt, so a receiver deduplicates by it
  expect(requests[0]!.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{43}$/);
  for (const r of requests) {
    expect(r.headers['webhook-id']).toBe(requests[0]!.headers['webhook-id']);
    expect(verifiedBy(OLD, r)).toBe(true);
    expect(verifiedBy(NEW, r)).toBe(true);
    expect(verifiedBy(secret(), r)).toBe(false);
    expect(Math.abs(Number(r.headers['webhook-timestamp']) - r.at / 1000)).toBeLessThan(5);
  }
});

test("two tenants' messages with the same message id carry different webhook-ids, each verified", async () => {
  // one receiver, one secret for both tenants: only the webhook-id tells their messages apart
  workerEnv.REDELIVER_SIGNING_SECRETS_ACME = JSON.stringify({
    secrets: [OLD, NEW],
    endpoints: [receiver.url],
    tenants: ['acme', 'globex'],
  });
  const messageId = `cmd-${randomUUID().slice(0, 8)}`;
  const inputs = ['acme', 'globex'].map((tenant) => event(`${receiver.url}/to-${tenant}`, { tenant, device: 'gw-1', messageId }));
  for (const input of inputs) expect(await (await h.redeliver.submit(input)).result()).toMatchObject({ outcome: 'delivered' });

  const requests = receiver.of(messageId);
  expect(requests).toHaveLength(2);
  expect(requests.map((r) => r.path).sort()).toEqual(['/to-acme', '/to-globex']);
  // a receiver deduplicating by webhook-id keeps both
  expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(2);
  for (const r of requests) expect(verifiedBy(NEW, r)).toBe(true);
});

test("a batch's request to a batched endpoint is signed as one message, with the batch's own id", async () => {
  const device = `sb-${randomUUID().slice(0, 8)}`;
  const inputs = Array.from({ length: 5 }, (_, i) =>
    event('', {
      device,
      messageId: `${device}-${i}`,
      target: { url: `${receiver.url}/batch`, batch: { format: 'ndjson' }, signing: 'acme' },
    }),
  );
  const result = await (await h.redeliver.submitBatch(inputs)).batches[0]!.result();
  expect(result).toMatchObject({ messages: 5, delivered: 5 });
  const batched = receiver.requests.filter((r) => r.path === '/batch');
  expect(batched).toHaveLength(1);
  expect(batched[0]!.headers['webhook-id']).toMatch(/^batch_/);
  expect(verifiedBy(NEW, batched[0]!)).toBe(true);
});

test('rotation: once the old secret is taken out of the worker, requests verify with the new one only — no restart', async () => {
  workerEnv.REDELIVER_SIGNING_SECRETS_ACME = JSON.stringify({ secrets: [NEW], endpoints: [receiver.url], tenants: ['acme'] });
  const input = event(`${receiver.url}/rotated`);
  expect(await (await h.redeliver.submit(input)).result()).toMatchObject({ outcome: 'delivered' });
  const [r] = receiver.of(input.messageId!);
  expect(verifiedBy(NEW, r!)).toBe(true);
  expect(verifiedBy(OLD, r!)).toBe(false);
});

test('a target the secret is not bound to gets nothing: the delivery is rejected, secret-not-bound', async () => {
  const input = event(`${stranger.url}/in`);
  const result = await (await h.redeliver.submit(input)).result();
  expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { code: 'secret-not-bound' } });
  expect(stranger.requests).toHaveLength(0);
});

describe("another tenant's delivery naming the secret", () => {
  test('is refused by the worker before any request: rejected, secret-not-for-tenant, the receiver sees nothing', async () => {
    // submitted where the worker's secrets cannot be seen (h.redeliver: this process's environment has none): the worker decides
    const input = event(`${receiver.url}/foreign`, { tenant: 'globex' });
    const result = await (await h.redeliver.submit(input)).result();
    expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { code: 'secret-not-for-tenant' } });
    expect(result.lastError!.reason).toContain('add it to "tenants" in REDELIVER_SIGNING_SECRETS_ACME');
    expect(receiver.requests.filter((r) => r.path === '/foreign')).toHaveLength(0);
  });

  test("is refused at submit, naming target.signing, where the submitter sees the worker's secrets: nothing starts", async () => {
    const seeing = new Redeliver(h.client, { taskQueue: h.taskQueue, env: workerEnv });
    const input = event(`${receiver.url}/foreign-submit`, { tenant: 'globex' });
    await expect(seeing.submit(input)).rejects.toMatchObject({ problems: [{ field: 'target.signing' }] });
    const deliveryId = `delivery/globex/signed/${input.messageId}`;
    await expect(h.client.workflow.getHandle(deliveryId).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    // a secret for every tenant, said explicitly, serves globex too
    workerEnv.REDELIVER_SIGNING_SECRETS_ACME = JSON.stringify({ secrets: [NEW], endpoints: [receiver.url], tenants: ['*'] });
    expect(await (await seeing.submit(input)).result()).toMatchObject({ outcome: 'delivered' });
    expect(verifiedBy(NEW, receiver.of(input.messageId!)[0]!)).toBe(true);
  });
});
