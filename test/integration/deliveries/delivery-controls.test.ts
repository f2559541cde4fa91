import { randomUUID } from 'node:crypto';
import { Redeliver } from '../../../src/client/index';
import { DeliveryControlError, RedeliverError } from '../../../src/errors';
import type { DeliveryInput } from '../../../src/delivery/types';
import { startReceiver, type Receiver } from '../../support/receiver';
import { useHarnessAndEndpoint } from '../../support/setup';
import { waitFor } from '../../support/wait';

const env = useHarnessAndEndpoint();

const delivery = (path: string, policy: DeliveryInput['policy']): DeliveryInput => ({
  kind: 'event',
  tenant: 'acme',
  device: `ctl-${randomUUID().slice(0, 8)}`,
  messageId: randomUUID(),
  payload: { n: 1 },
  target: `${env.endpoint.url}${path}`,
  policy,
});
const requestsOf = (messageId: string | undefined) => env.endpoint.received.filter((r) => r.messageId === messageId);
const visible = async (query: string) => {
  let n = 0;
  for await (const _ of env.h.client.workflow.list({ query })) n++;
  return n;
};

test('retry now ends a long wait: the next attempt starts at once', async () => {
  const input = delivery('/retry-now?fail=1&status=503', { jitter: 'none', initial: '10m', min: '10m', max: '10m' });
  const handle = await env.h.redeliver.submit(input);
  const waiting = await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting',
    10_000,
    'the first wait',
  );
  expect(Date.parse(waiting.nextAttemptAt!) - Date.now()).toBeGreaterThan(9 * 60_000);
  expect(waiting.summary).toMatch(/^waiting 10 min after HTTP 503 — attempt 2 next/);

  const asked = Date.now();
  await handle.retryNow();
  const result = await handle.result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 2 });
  const second = requestsOf(input.messageId)[1]!;
  expect(second.at - asked).toBeLessThan(5_000);
});

test('pause stops attempts (state and search attribute say so); resume goes on', async () => {
  const input = delivery('/paused', { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' });
  env.endpoint.setDown('/paused', true);
  const handle = await env.h.redeliver.submit(input);
  await waitFor(
    () => handle.status(),
    (s) => s.attempts >= 2,
    10_000,
    'two attempts',
  );

  const paused = await handle.pause('endpoint maintenance');
  expect(paused.pause?.reason).toBe('endpoint maintenance');
  await expect(handle.retryNow()).rejects.toThrow(/paused: resume it first/);
  await expect(handle.pause()).rejects.toThrow(DeliveryControlError);
  const status = await waitFor(
    () => handle.status(),
    (s) => s.state === 'paused',
    10_000,
    'paused',
  );
  expect(status.nextAttemptAt).toBeNull();
  await waitFor(
    () => visible(`WorkflowId = '${handle.deliveryId}' AND DeliveryState = 'paused'`),
    (n) => n === 1,
    10_000,
    'DeliveryState = paused',
  );

  // a window in which an unpaused delivery would have made about 5 attempts
  const before = requestsOf(input.messageId).length;
  await new Promise((r) => setTimeout(r, 1_200));
  expect(requestsOf(input.messageId)).toHaveLength(before);

  env.endpoint.setDown('/paused', false);
  await handle.resume();
  const result = await handle.result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: before + 1 });
});

test('cancel ends a waiting delivery as cancelled, and the UI shows it Cancelled', async () => {
  const input = delivery('/cancel?fail=99&status=500', { jitter: 'none', initial: '10m', min: '10m', max: '10m' });
  const handle = await env.h.redeliver.submit(input);
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting',
    10_000,
    'the first wait',
  );
  await handle.cancel();
  expect(await handle.result()).toMatchObject({ outcome: 'cancelled', attempts: 1 });
  expect((await handle.workflow.describe()).status.name).toBe('CANCELLED');
  await waitFor(
    () => visible(`WorkflowId = '${handle.deliveryId}' AND DeliveryState = 'cancelled'`),
    (n) => n === 1,
    10_000,
    'DeliveryState = cancelled',
  );
});

test('controls on a finished delivery say it has ended', async () => {
  const handle = await env.h.redeliver.submit(delivery('/done', undefined));
  await handle.result();
  await expect(handle.retryNow()).rejects.toThrow(/has ended \(delivered\)/);
  await expect(handle.pause()).rejects.toThrow(/has ended \(delivered\)/);
  await expect(handle.cancel()).rejects.toThrow(/has ended \(delivered\)/);
});

test('each refusal has a kind a caller can branch on, and is a RedeliverError', async () => {
  const waitLong = { jitter: 'none', initial: '10m', min: '10m', max: '10m' } as const;
  const handle = await env.h.redeliver.submit(delivery('/kinds?fail=99&status=503', waitLong));
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting',
    10_000,
    'the first wait',
  );
  const kindOf = (control: Promise<unknown>) =>
    control.then(
      () => 'accepted',
      (err: unknown) => (err instanceof DeliveryControlError && err instanceof RedeliverError ? err.kind : err),
    );

  expect(await kindOf(handle.resume())).toBe('NotPaused');
  expect(await kindOf(handle.pause('kinds'))).toBe('accepted');
  expect(await kindOf(handle.pause())).toBe('AlreadyPaused');
  expect(await kindOf(handle.retryNow())).toBe('NotWaiting');
  expect(await kindOf(handle.resume())).toBe('accepted');
  expect(await kindOf(handle.cancel())).toBe('accepted');
  expect(await kindOf(handle.resume())).toBe('Ended');
  expect(await kindOf(handle.cancel())).toBe('Ended');
  expect(await kindOf(env.h.redeliver.redrive(handle.deliveryId))).toBe('NotADeadLetter');
});

test('a long delivery continues as new, carrying its attempts, first attempt time and last error', async () => {
  const redeliver = new Redeliver(env.h.client, { taskQueue: env.h.taskQueue, historyLimit: 20, singleSubmit: 'workflow' });
  // the error class changes on every attempt (server, throttled): each change wakes the workflow, whose history grows
  const input = delivery('/long?fail=6&status=502,429', { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' });
  const handle = await redeliver.submit(input);
  const result = await handle.result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 7, lastError: { code: 'http-429', attempt: 6 } });
  const requests = requestsOf(input.messageId);
  expect(requests.map((r) => r.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(Math.abs(Date.parse(result.firstAttemptAt!) - requests[0]!.at)).toBeLessThan(1_000);

  const runs = [];
  for await (const e of env.h.client.workflow.list({ query: `WorkflowId = '${handle.deliveryId}'` })) runs.push(e);
  expect(runs.length).toBeGreaterThanOrEqual(3);
  const latest = await handle.workflow.describe();
  expect(latest.typedSearchAttributes.get({ name: 'Tenant', type: 'KEYWORD' } as never)).toBe('acme');
  for (const run of runs) {
    const history = await env.h.client.workflow.getHandle(handle.deliveryId, run.runId).fetchHistory();
    expect(history.events!.length).toBeLessThanOrEqual(20 + 15);
  }
});

describe('every control answers with the attempts the receiver saw', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  // attempts 300 ms apart, retried by Temporal's server: the workflow's own count lags behind
  const failingUntil = (path: string, accept: () => boolean): DeliveryInput => {
    receiver.route(path, () => (accept() ? { status: 202 } : { status: 503 }));
    return {
      kind: 'event',
      tenant: 'acme',
      device: `count-${randomUUID().slice(0, 8)}`,
      messageId: randomUUID(),
      payload: { n: 1 },
      target: `${receiver.url}${path}`,
      policy: { jitter: 'none', initial: '300ms', min: '300ms', max: '300ms' },
    };
  };
  const seen = (input: DeliveryInput) => receiver.of(input.messageId!).map((r) => r.attempt);

  test('pause, resume, retry now and the result', async () => {
    let accepting = false;
    const input = failingUntil('/counted', () => accepting);
    const handle = await env.h.redeliver.submit(input);
    await waitFor(
      async () => seen(input).length,
      (n) => n >= 4,
      15_000,
      'four attempts',
    );

    const paused = await handle.pause('count');
    // the pause answers once the retrying has stopped: an attempt in flight then has finished, and no other comes
    expect(seen(input)).toEqual(Array.from({ length: paused.attempts }, (_, i) => i + 1));
    expect((await handle.status()).attempts).toBe(paused.attempts);
    const resumed = await handle.resume();
    expect(resumed.attempts).toBe(paused.attempts);

    await waitFor(
      async () => seen(input).length,
      (n) => n >= paused.attempts + 3,
      15_000,
      'three more attempts',
    );
    const retried = await handle.retryNow();
    // what retry now answers is what was sent: the next attempt the receiver sees is the one after it
    await waitFor(
      async () => seen(input).length,
      (n) => n > retried.attempts,
      15_000,
      'the attempt retry now asked for',
    );
    expect(seen(input).slice(0, retried.attempts + 1)).toEqual(Array.from({ length: retried.attempts + 1 }, (_, i) => i + 1));

    accepting = true;
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'delivered', attempts: seen(input).length });
  });

  test('cancel, and the result of the cancelled delivery', async () => {
    const input = failingUntil('/counted-cancel', () => false);
    const handle = await env.h.redeliver.submit(input);
    await waitFor(
      async () => seen(input).length,
      (n) => n >= 4,
      15_000,
      'four attempts',
    );
    const cancelled = await handle.cancel();
    expect(await handle.result()).toMatchObject({ outcome: 'cancelled', attempts: seen(input).length });
    expect(cancelled).toMatchObject({ state: 'cancelled', attempts: seen(input).length });
    expect(seen(input)).toEqual(Array.from({ length: cancelled.attempts }, (_, i) => i + 1));
  });
});

test('a cancel that comes while an attempt is in flight: the attempt ends it delivered, and it says so', async () => {
  const receiver = await startReceiver();
  try {
    // the first attempt fails (Temporal retries the rest), the second takes 3 s and is accepted
    receiver.route('/slow-ok', (req) => (req.attempt === 1 ? { status: 503 } : { status: 202, delayMs: 3_000 }));
    const input: DeliveryInput = {
      ...delivery('/slow-ok', { jitter: 'none', initial: '300ms', min: '300ms', max: '300ms' }),
      target: `${receiver.url}/slow-ok`,
    };
    const handle = await env.h.redeliver.submit(input);
    await waitFor(
      async () => receiver.of(input.messageId!).length,
      (n) => n >= 2,
      15_000,
      'the second attempt',
    );
    const status = await handle.cancel();
    expect(status).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });
    expect(receiver.accepted().has(input.messageId!)).toBe(true);
  } finally {
    await receiver.close();
  }
});

test('cancel with no worker to take it up answers within its wait, saying the cancel is requested', async () => {
  // a task queue no worker polls: the delivery never ends, and cancel() must not wait for it forever (a standalone
  // first attempt not yet taken is cancelled by the server at once: single-submit.test.ts)
  const idle = new Redeliver(env.h.client, { taskQueue: `nobody-${randomUUID()}`, singleSubmit: 'workflow' });
  const handle = await idle.submit(delivery('/never', undefined));
  const asked = Date.now();
  const status = await handle.cancel({ waitMs: 1_500 });
  expect(Date.now() - asked).toBeLessThan(10_000);
  expect(status.summary).toMatch(/^cancel requested/);
  expect(status.deliveryId).toBe(handle.deliveryId);
  await env.h.client.workflow.getHandle(handle.deliveryId).terminate('test cleanup');
});
