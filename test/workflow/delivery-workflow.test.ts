/**
 * deliveryWorkflow with stubbed activities (test/support/stub-activities.ts) on Temporal's test
 * environment: what the workflow makes of each outcome its activities report, as a user sees it in the
 * result, the `status` query, the controls' answers and the search attributes.
 */
import { randomUUID } from 'node:crypto';
import { CancelledFailure, WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { Redeliver, type RedeliverOptions } from '../../src/client/index';
import type { DeliveryInput, DeliveryStatus } from '../../src/delivery/types';
import { Attempts, DeliveryState, LastErrorClass, pauseUpdate, resumeUpdate, retryNowUpdate, statusQuery } from '../../src/contract';
import type { deliveryWorkflow } from '../../src/workflows/delivery';
import { runsOf } from '../support/histories';
import {
  ACCEPTED,
  BAD_REQUEST,
  ScriptedDeliveries,
  TOO_MANY,
  UNAVAILABLE,
  type DeliveryScript,
  type RetryStep,
} from '../support/stub-activities';
import { useStubbedWorker } from '../support/stubbed-worker';
import { waitFor } from '../support/wait';

const stubs = new ScriptedDeliveries();
const w = useStubbedWorker(stubs.activities());
/** Long waits: nothing but a control or the stubbed retrying activity moves these deliveries on. */
const LONG = { jitter: 'none', initial: '10m', min: '10m', max: '10m' } as const;

type Handle = WorkflowHandle<typeof deliveryWorkflow>;

async function submit(script: DeliveryScript, input: Partial<DeliveryInput> = {}, options: RedeliverOptions = {}) {
  const messageId = randomUUID();
  const calls = stubs.script(messageId, script);
  // the workflow's own tests: its delivery starts from the submit (no standalone first attempt)
  const redeliver = new Redeliver(w.client, { taskQueue: w.taskQueue, singleSubmit: 'workflow', ...options });
  const submitted = await redeliver.submit({
    kind: 'event',
    tenant: 'acme',
    device: 'sensor-1',
    messageId,
    payload: { t: 21.5 },
    target: 'https://hub.example.com/events',
    policy: LONG,
    ...input,
  });
  return { handle: submitted.workflow as Handle, calls };
}

const status = (handle: Handle) => handle.query(statusQuery);
const waitForState = (handle: Handle, state: DeliveryStatus['state']) =>
  waitFor(
    () => status(handle),
    (s) => s.state === state,
    15_000,
    `state ${state}`,
  );

/** What the UI's list shows of the delivery: its search attributes. */
async function listed(handle: Handle) {
  const { typedSearchAttributes: sa } = await handle.describe();
  return { state: sa.get(DeliveryState), attempts: sa.get(Attempts), lastErrorClass: sa.get(LastErrorClass) };
}

/** The failure type of a refused update (the workflow's validator), for the client to tell refusals apart. */
async function refusal(update: Promise<unknown>): Promise<string | undefined> {
  const err = await update.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  return ((err as WorkflowUpdateFailedError).cause as { type?: string } | undefined)?.type;
}

describe('outcomes', () => {
  test('delivered at once: one attempt, no error, listed as delivered', async () => {
    const { handle, calls } = await submit({});
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'delivered', attempts: 1, lastError: null });
    expect(result.reason).toMatch(/on attempt 1$/);
    expect(result.message).toBeUndefined();
    expect(calls).toEqual({ sent: [1], retries: [] });
    expect(await listed(handle)).toEqual({ state: 'delivered', attempts: 1, lastErrorClass: undefined });
    expect(await status(handle)).toMatchObject({
      state: 'delivered',
      attempts: 1,
      nextAttemptAt: null,
      attemptLog: [{ attempt: 1, ok: true, code: 'http-202' }],
    });
  });

  test('rejected: a 400 ends it after one attempt, a dead letter that keeps its message', async () => {
    const { handle, calls } = await submit({ send: [BAD_REQUEST] });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'http-400', attempt: 1 } });
    expect(result.message?.messageId).toBe(result.messageId);
    expect(calls.retries).toEqual([]);
    expect(await listed(handle)).toEqual({ state: 'rejected', attempts: 1, lastErrorClass: 'client' });
  });

  test('dropped: telemetry QoS 0 is sent once, and a 503 drops it', async () => {
    const { handle, calls } = await submit({ send: [UNAVAILABLE] }, { kind: 'telemetry', qos: 0, policy: undefined });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'dropped', attempts: 1, lastError: { class: 'server', code: 'http-503' } });
    expect(result.reason).toMatch(/QoS 0 is sent once/);
    expect(calls).toEqual({ sent: [1], retries: [] });
    expect(await listed(handle)).toEqual({ state: 'dropped', attempts: 1, lastErrorClass: 'server' });
  });

  test('retries, then delivered: the retrying activity takes over after the first failure, and its count is the delivery’s', async () => {
    const { handle, calls } = await submit({ send: [UNAVAILABLE], retries: [{ end: 'delivered', attempts: 2, answer: ACCEPTED }] });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'delivered', attempts: 3 });
    expect(result.reason).toMatch(/on attempt 3$/);
    expect(calls.sent).toEqual([1]);
    // it starts from what the first attempt left: one attempt, its error, the next attempt 10 min after it
    const [retrying] = calls.retries;
    expect(retrying).toMatchObject({
      searchedClass: 'server',
      progress: { attempts: 1, lastError: { class: 'server', code: 'http-503', attempt: 1 } },
    });
    expect(retrying!.progress.nextAttemptAt - retrying!.progress.lastAttemptAt).toBe(10 * 60_000);
    expect(await listed(handle)).toEqual({ state: 'delivered', attempts: 3, lastErrorClass: 'server' });
  });

  test('the error class changes while retrying: LastErrorClass follows it; then exhausted, the message kept', async () => {
    const { handle, calls } = await submit({
      send: [UNAVAILABLE],
      retries: [
        { end: 'class-changed', attempts: 1, answer: TOO_MANY },
        { end: 'exhausted', attempts: 3, answer: TOO_MANY },
      ],
    });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'exhausted', attempts: 5, lastError: { class: 'well-known', code: 'http-429' } });
    expect(result.message?.messageId).toBe(result.messageId);
    expect(calls.retries.map((r) => [r.searchedClass, r.progress.attempts])).toEqual([
      ['server', 1],
      ['well-known', 2],
    ]);
    expect(await listed(handle)).toEqual({ state: 'exhausted', attempts: 5, lastErrorClass: 'well-known' });
  });

  test('exhausted by the policy at the first failure (maxAttempts 1): no retrying', async () => {
    const { handle, calls } = await submit({ send: [UNAVAILABLE] }, { policy: { ...LONG, maxAttempts: 1 } });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'exhausted', attempts: 1 });
    expect(result.reason).toMatch(/^1 of 1 attempts made/);
    expect(calls.retries).toEqual([]);
  });

  test('expired: the next attempt would fall after the max age, so it ends now', async () => {
    const { handle, calls } = await submit({ send: [UNAVAILABLE] }, { policy: { ...LONG, maxAge: '5m' } });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'expired', attempts: 1 });
    expect(result.reason).toMatch(/would fall after the max age/);
    expect(calls.retries).toEqual([]);
    expect(await listed(handle)).toEqual({ state: 'expired', attempts: 1, lastErrorClass: 'server' });
  });
});

describe('controls', () => {
  test('pause stops the retrying and answers with its count; pause again and retry now are refused; resume goes on', async () => {
    // after the resume the retrying waits again, so that the delivery is still running when resume is asked twice
    // (with an outcome at once, it could end first: the second update then finds no running workflow)
    const retries: RetryStep[] = [{ wait: 3 }, { wait: 0 }, { end: 'delivered', attempts: 1, answer: ACCEPTED }];
    const { handle, calls } = await submit({ send: [UNAVAILABLE], retries });
    expect((await waitForState(handle, 'waiting')).nextAttemptAt).not.toBeNull();

    const paused = await handle.executeUpdate(pauseUpdate, { args: ['endpoint maintenance'] });
    expect(paused).toMatchObject({ state: 'paused', attempts: 4, nextAttemptAt: null, pause: { reason: 'endpoint maintenance' } });
    expect(await refusal(handle.executeUpdate(pauseUpdate, { args: ['again'] }))).toBe('AlreadyPaused');
    expect(await refusal(handle.executeUpdate(retryNowUpdate))).toBe('NotWaiting');
    expect(await listed(handle)).toMatchObject({ state: 'paused' });

    expect((await handle.executeUpdate(resumeUpdate)).pause).toBeNull();
    expect(await refusal(handle.executeUpdate(resumeUpdate))).toBe('NotPaused');
    await handle.executeUpdate(retryNowUpdate);
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 5 });
    // the retrying resumed from the count the paused one had reached
    expect(calls.retries.map((r) => r.progress.attempts)).toEqual([1, 4, 4]);
  });

  test('retry now ends a 10 min wait: the next attempt goes out at once, past the retry budget', async () => {
    const retries: RetryStep[] = [{ wait: 2 }, { end: 'delivered', attempts: 1, answer: ACCEPTED }];
    const { handle, calls } = await submit({ send: [UNAVAILABLE], retries });
    const waiting = await waitForState(handle, 'waiting');
    expect(Date.parse(waiting.nextAttemptAt!) - Date.now()).toBeGreaterThan(9 * 60_000);

    const asked = Date.now();
    expect(await handle.executeUpdate(retryNowUpdate)).toMatchObject({ attempts: 3 });
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 4 });
    const again = calls.retries[1]!;
    expect(again.skipBudget).toBe(true);
    expect(again.progress).toMatchObject({ attempts: 3 });
    expect(again.progress.nextAttemptAt).toBeLessThan(asked + 10_000);
  });

  test('cancel ends a waiting delivery as cancelled, with the attempts the retrying made', async () => {
    const { handle } = await submit({ send: [UNAVAILABLE], retries: [{ wait: 5 }] });
    await waitForState(handle, 'waiting');
    await handle.cancel();
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(await listed(handle)).toMatchObject({ state: 'cancelled', attempts: 6 });
    expect(await status(handle)).toMatchObject({ state: 'cancelled', attempts: 6, nextAttemptAt: null });
  });

  test('a deadline that passes while paused: expired on resume', async () => {
    const deadline = Date.now() + 3_000;
    const policy = { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms', deadline } as const;
    const { handle } = await submit({ send: [UNAVAILABLE], retries: [{ wait: 1 }] }, { policy });
    await waitForState(handle, 'waiting');
    await handle.executeUpdate(pauseUpdate, { args: ['until after the deadline'] });
    // the deadline is the scenario's clock, not a race: nothing happens until it has passed
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now()) + 100));
    await handle.executeUpdate(resumeUpdate);
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'expired', attempts: 2 });
    expect(result.reason).toMatch(/deadline .* passed while paused/);
  });
});

describe('continue-as-new', () => {
  test('a long history goes on in a new run with the attempts, first attempt, last error and planned time', async () => {
    // 5 events: the run continues as new at its first failed attempt
    const policy = { jitter: 'none', initial: '300ms', min: '300ms', max: '300ms' } as const;
    const { handle, calls } = await submit({ send: [UNAVAILABLE, ACCEPTED] }, { policy }, { historyLimit: 5 });
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'delivered', attempts: 2, lastError: { code: 'http-503', attempt: 1 } });
    expect(calls.sent).toEqual([1, 2]);

    const runs = await runsOf(w.client, handle.workflowId);
    expect(runs).toHaveLength(2);
    const carried = runs[1]!.input.carried!;
    expect(carried).toMatchObject({ run: 2, attempts: 1, firstAttemptAt: Date.parse(result.firstAttemptAt!), pause: null });
    // the new run waited for the attempt planned by the old one
    expect(Date.parse(result.lastAttemptAt!)).toBeGreaterThanOrEqual(carried.nextAttemptAt!);
  });

  test('a pause survives continue-as-new: the new run is paused with the same reason and count', async () => {
    // the run checks its length as it starts retrying (9 events then) and after the pause stopped the
    // retrying (about 26): 16 lets it through the first check and continues it as new at the second
    const { handle } = await submit({ send: [UNAVAILABLE, ACCEPTED], retries: [{ wait: 3 }] }, {}, { historyLimit: 16 });
    await waitForState(handle, 'waiting');
    const firstRun = (await handle.describe()).runId;
    await handle.executeUpdate(pauseUpdate, { args: ['firmware rollout'] });

    const paused = await waitFor(
      () => handle.describe(),
      (d) => d.runId !== firstRun,
      15_000,
      'a new run',
    );
    expect(paused.typedSearchAttributes.get(DeliveryState)).toBe('paused');
    expect(await status(handle)).toMatchObject({ state: 'paused', attempts: 4, pause: { reason: 'firmware rollout' } });

    await handle.executeUpdate(resumeUpdate);
    await waitForState(handle, 'waiting');
    await handle.executeUpdate(retryNowUpdate);
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 5 });
  });
});
