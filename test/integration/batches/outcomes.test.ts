/**
 * Every outcome a message of a batch can have, on the suite's dev server: delivered at once, retried by its
 * own delivery at the policy's time (or the server's Retry-After), and every dead letter — which the CLI
 * lists, shows and redrives like any other; the handed-over delivery's status and controls.
 */
import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import { DeliveryControlError } from '../../../src/errors';
import { runCli } from '../../support/cli';
import { eventTo } from '../../support/messages';
import { useHarnessAndEndpoint } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

// the messages here fail one by one on purpose, to one endpoint (which would then look failing and hold them:
// outage-hold.test.ts): this file is about the delivery of its own a failed message gets, as with `outage off`
const env = useHarnessAndEndpoint({ outageHold: false });

const fixed = (wait: string) => ({ jitter: 'none', initial: wait, min: wait, max: wait }) as const;
const message = (device: string, path: string, extra: Partial<DeliveryInput> = {}) => eventTo(env.endpoint.url, device, path, extra);
const newDevice = () => `o-${randomUUID().slice(0, 8)}`;
const requestsOf = (input: DeliveryInput) => env.endpoint.received.filter((r) => r.messageId === input.messageId);
const cli = async (...args: string[]) => {
  const run = await runCli([...args, '--address', testAddress(), '--task-queue', env.h.taskQueue]);
  if (run.code !== 0) throw new Error(`redeliver ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return run.stdout;
};

test('delivered at once; retried by its own delivery at the policy’s time; after a Retry-After at the server’s', async () => {
  const device = newDevice();
  const ok = Array.from({ length: 5 }, () => message(device, '/ok'));
  const retried = message(device, '/retried?fail=1&status=503', { policy: fixed('1s') });
  const hinted = message(device, '/hinted?fail=1&status=503&retryAfter=2');
  const submission = await env.h.redeliver.submitBatch([...ok, retried, hinted]);

  const batch = await submission.batches[0]!.result();
  expect(batch).toMatchObject({ messages: 7, delivered: 5, handedOver: 2 });
  expect(batch.results.map((r) => [r.messageId, r.disposition, r.code])).toEqual([
    ...ok.map((m) => [m.messageId, 'delivered', 'http-202']),
    [retried.messageId, 'handed-over', 'http-503'],
    [hinted.messageId, 'handed-over', 'http-503'],
  ]);
  for (const r of batch.results) expect(Date.parse(r.at)).not.toBeNaN();

  const outcomes = await submission.outcomes();
  expect(outcomes.map((o) => [o.outcome, o.attempts])).toEqual([...ok.map(() => ['delivered', 1]), ['delivered', 2], ['delivered', 2]]);
  for (const m of ok) expect(requestsOf(m).map((r) => r.attempt)).toEqual([1]);

  // attempt 2 is the delivery's, no sooner than the policy's wait (1 s) after the batch's attempt 1 ended
  const [first, second] = requestsOf(retried);
  expect([first!.attempt, second!.attempt]).toEqual([1, 2]);
  expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
  const result = await env.h.redeliver.getHandle(submission.deliveryIds[5]!).result();
  expect(result).toMatchObject({ outcome: 'delivered', attempts: 2, lastError: { code: 'http-503', attempt: 1 } });
  expect(result.firstAttemptAt! <= batch.results[5]!.at).toBe(true);
  // the endpoint asked for 2 s: the policy's 200 ms gives way
  const hintedSeen = requestsOf(hinted);
  expect(hintedSeen.map((r) => r.status)).toEqual([503, 202]);
  expect(hintedSeen[1]!.at - hintedSeen[0]!.at).toBeGreaterThanOrEqual(2_000);
});

test('dead letters: rejected, dropped, exhausted and expired through the handed-over delivery; the CLI lists, shows and redrives them', async () => {
  const device = newDevice();
  const rejected = message(device, '/rejected?fail=1&status=400');
  const dropped = message(device, '/dropped?fail=99&status=503', { kind: 'telemetry', qos: 0 });
  const exhausted = message(device, '/exhausted?fail=99&status=500', { policy: { ...fixed('200ms'), maxAttempts: 3 } });
  const expired = message(device, '/expired?fail=99&status=503', { policy: { ...fixed('500ms'), maxAge: '1500ms' } });
  const submission = await env.h.redeliver.submitBatch([message(device, '/ok'), rejected, dropped, exhausted, expired]);
  const outcomes = await submission.outcomes();
  expect(outcomes.map((o) => [o.outcome, o.code])).toEqual([
    ['delivered', 'http-202'],
    ['rejected', 'http-400'],
    ['dropped', 'http-503'],
    ['exhausted', 'http-500'],
    ['expired', 'http-503'],
  ]);
  expect(outcomes.slice(1, 4).map((o) => o.attempts)).toEqual([1, 1, 3]);
  expect(outcomes[4]!.attempts).toBeGreaterThanOrEqual(2);
  // every attempt counted is one the endpoint saw, the batch's first among them
  for (const [i, m] of [rejected, dropped, exhausted, expired].entries()) {
    expect(requestsOf(m).map((r) => r.attempt)).toEqual(Array.from({ length: outcomes[i + 1]!.attempts }, (_, n) => n + 1));
  }

  const ids = submission.deliveryIds;
  const listed = await waitFor(
    async () => JSON.parse(await cli('dead-letters', 'list', '--device', device, '--json')) as { deliveryId: string; state: string }[],
    (rows) => rows.length === 4,
    15_000,
    'four dead letters',
  );
  expect(new Map(listed.map((r) => [r.deliveryId, r.state]))).toEqual(
    new Map([
      [ids[1], 'rejected'],
      [ids[2], 'dropped'],
      [ids[3], 'exhausted'],
      [ids[4], 'expired'],
    ]),
  );
  const shown = JSON.parse(await cli('dead-letters', 'show', ids[1]!, '--json'));
  expect(shown).toMatchObject({
    outcome: 'rejected',
    attempts: 1,
    lastError: { class: 'client', code: 'http-400', attempt: 1 },
    message: { messageId: rejected.messageId, body: JSON.stringify(rejected.payload), device },
  });

  // redriven: a new run of the same id sends the kept message again, and the endpoint now takes it
  expect(JSON.parse(await cli('redrive', ids[1]!, '--json'))).toEqual({ deliveryId: ids[1], redriven: true });
  expect(await env.h.redeliver.getHandle(ids[1]!).result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  expect(requestsOf(rejected).map((r) => [r.attempt, r.status])).toEqual([
    [1, 400],
    [1, 202],
  ]);
});

test('the handed-over delivery: its status counts the batch’s attempt 1, and pause, resume, retry now and cancel work on it', async () => {
  const device = newDevice();
  const input = message(device, '/held?fail=2&status=503', { policy: fixed('1h') });
  const submission = await env.h.redeliver.submitBatch([input, message(device, '/ok')]);
  const [row] = (await submission.batches[0]!.result()).results;
  const handle = env.h.redeliver.getHandle(row!.deliveryId);
  expect(row).toMatchObject({ deliveryId: `delivery/acme/${device}/${input.messageId}`, disposition: 'handed-over', code: 'http-503' });

  const waiting = await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting',
    15_000,
    'the delivery waiting for attempt 2',
  );
  expect(waiting).toMatchObject({ attempts: 1, lastAttemptAt: row!.at, lastError: { code: 'http-503', attempt: 1 } });
  expect(waiting.attemptLog).toEqual([
    {
      attempt: 1,
      startedAt: waiting.firstAttemptAt,
      durationMs: expect.any(Number),
      code: 'http-503',
      ok: false,
      class: 'server',
      answer: expect.stringMatching(/^HTTP 503 Service Unavailable: .*the endpoint said: scripted failure/),
    },
  ]);
  expect(Date.parse(waiting.nextAttemptAt!) - Date.parse(row!.at)).toBe(3_600_000);
  expect(waiting.summary).toMatch(/^waiting (1 h|59 min) after HTTP 503 — attempt 2 next/);
  const description = await handle.workflow.describe();
  expect(await description.staticSummary()).toContain(`(from ${submission.batches[0]!.workflowId})`);
  expect(description.memo).toMatchObject({ batch: submission.batches[0]!.workflowId });

  expect((await handle.pause('maintenance')).pause?.reason).toBe('maintenance');
  await expect(handle.retryNow()).rejects.toThrow(DeliveryControlError);
  expect((await handle.resume()).pause).toBeNull();
  await handle.retryNow();
  const again = await waitFor(
    () => handle.status(),
    (s) => s.attemptLog.length === 2 && s.state === 'waiting',
    15_000,
    'attempt 2, then waiting again',
  );
  expect(again.attemptLog.map((a) => [a.attempt, a.code])).toEqual([
    [1, 'http-503'],
    [2, 'http-503'],
  ]);
  expect(await handle.cancel()).toMatchObject({ state: 'cancelled', attempts: 2 });
  expect(requestsOf(input).map((r) => r.attempt)).toEqual([1, 2]);
});
