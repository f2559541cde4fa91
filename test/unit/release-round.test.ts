import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { DueAnswer, HeldMessage, HoldReport } from '../../src/contract';
import { createReleaseActivities, withReports } from '../../src/activities/release';
import type { AttemptResult } from '../../src/activities/deliver';
import { validateDelivery } from '../../src/validation/delivery';
import type { PaceSlot, RecoveryPacer } from '../../src/worker-services/pacer';

/*
 * A release round (activities/release.ts) against a hold and a pacer of its own making: what it asks of the hold,
 * and what becomes of its reports when their signal fails.
 */

const ENDPOINT = 'ingest.example.com:443';
const logger = new DefaultLogger('ERROR');

function held(i: number): HeldMessage {
  const delivery = validateDelivery({
    kind: 'telemetry',
    qos: 1,
    tenant: 'acme',
    device: 'd1',
    messageId: `m${i}`,
    target: { url: `https://${ENDPOINT}/in` },
    payload: { i },
  });
  const now = Date.now();
  return {
    delivery,
    batch: 'batch/1',
    heldAt: now,
    attempts: 0,
    firstAttemptAt: now,
    lastAttemptAt: null,
    lastError: null,
    attemptLog: [],
  };
}

/** A hold of `messages` that answers `due` in one page and hands each signal to `signal`. */
function holdOf(messages: HeldMessage[], signal: (reports: HoldReport[]) => Promise<void>) {
  const asked: unknown[] = [];
  const handle = {
    query: async (_query: unknown, page: unknown): Promise<DueAnswer> => {
      asked.push(page);
      return { messages, next: null };
    },
    signal: async (_signal: unknown, reports: HoldReport[]) => signal(reports),
  };
  const client = { workflow: { getHandle: () => handle } } as unknown as Client;
  return { client, asked };
}

/** A pacer that is failing (no slot, ask again in a second) or gives every slot asked. */
function pacerOf(failing: boolean): RecoveryPacer {
  const slot: PaceSlot = { probe: false, sent: () => undefined };
  return { acquire: async () => (failing ? { waitMs: 1_000 } : slot) } as unknown as RecoveryPacer;
}

const delivered = async (): Promise<AttemptResult> => ({ ok: true, code: 'http-202', reason: 'accepted', durationMs: 1 });

function release(deps: Parameters<typeof createReleaseActivities>[0]) {
  const env = new MockActivityEnvironment(undefined, { logger });
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const { releaseHeld } = createReleaseActivities(deps);
  const run = env.run(releaseHeld, { holdId: 'hold/acme/ingest/1', tenant: 'acme', endpoint: ENDPOINT });
  return { run, beats };
}

test('while the endpoint fails, a round asks the pacer and waits on the server, without asking the hold for a page', async () => {
  const { client, asked } = holdOf([held(1), held(2)], async () => undefined);
  const attempt = jest.fn(delivered);
  const { run } = release({ client, pacer: pacerOf(true), attempt });
  await expect(run).rejects.toMatchObject({ nextRetryDelay: 1_000 });
  expect(asked).toEqual([]);
  expect(attempt).not.toHaveBeenCalled();
});

test('once it answers, every message goes and their reports reach the hold', async () => {
  const signalled: HoldReport[] = [];
  const { client, asked } = holdOf([held(1), held(2), held(3)], async (reports) => void signalled.push(...reports));
  const { run } = release({ client, pacer: pacerOf(false), attempt: delivered });
  await expect(run).resolves.toEqual({ delivered: 3, handedOver: 0, waiting: false });
  expect(asked).toHaveLength(1);
  expect(signalled.map((r) => [r.deliveryId, r.now])).toEqual([1, 2, 3].map((i) => [held(i).delivery.deliveryId, 'delivered']));
});

test('a signal the hold did not take fails the round, and its reports stay in the heartbeat for the next attempt', async () => {
  const { client } = holdOf([held(1), held(2)], async () => {
    throw new Error('the hold is unreachable');
  });
  const { run, beats } = release({ client, pacer: pacerOf(false), attempt: delivered });
  await expect(run).rejects.toThrow('the hold is unreachable');
  const last = beats.at(-1) as { pending: HoldReport[] };
  expect(last.pending.map((r) => r.now)).toEqual(['delivered', 'delivered']);
});

test('a message with reports the hold has not had yet: its attempts count on from the last (those it had change nothing)', () => {
  const m = held(1);
  const id = m.delivery.deliveryId;
  const attempt = (n: number) => ({
    attempt: n,
    startedAt: new Date(Date.now() + n).toISOString(),
    durationMs: 5,
    code: 'http-503',
    ok: false,
  });
  const counted = { ...m, attempts: 2, attemptLog: [attempt(2)] };
  const pending: HoldReport[] = [
    { deliveryId: id, attempt: attempt(2), now: 'waiting' },
    { deliveryId: 'delivery/acme/d1/other', attempt: attempt(3), now: 'waiting' },
    { deliveryId: id, attempt: attempt(3), now: 'waiting' },
  ];
  const now = withReports(counted, pending);
  expect(now.attempts).toBe(3);
  expect(now.attemptLog.map((a) => a.attempt)).toEqual([2, 3]);
  expect(withReports(counted, [])).toBe(counted);
});

test('a page the hold could not answer gives the slot back (a probe slot kept would stop every later probe)', async () => {
  const given: (string | null)[] = [];
  const pacer = {
    acquire: async () => ({ probe: true, sent: (o: unknown) => given.push(o === null ? null : 'sent') }),
  } as unknown as RecoveryPacer;
  const client = {
    workflow: {
      getHandle: () => ({
        query: async () => {
          throw new Error('the hold did not answer');
        },
        signal: async () => undefined,
      }),
    },
  } as unknown as Client;
  const { run } = release({ client, pacer, attempt: delivered });
  await expect(run).rejects.toThrow('the hold did not answer');
  expect(given).toEqual([null]);
});
