import type { Client } from '@temporalio/client';
import type { HeldMessage } from '../../src/contract';
import { HoldIntake } from '../../src/starter/hold-intake';
import { validateDelivery } from '../../src/validation/delivery';

// How batches hand their messages to an outage hold: Temporal refuses a workflow more than a few updates in flight,
// so the batches of one worker that come while a hand-in is in flight go together in the next one.

function held(n: number): HeldMessage {
  const delivery = validateDelivery({
    kind: 'telemetry',
    tenant: 'acme',
    device: `d-${n}`,
    messageId: `m-${n}`,
    target: 'https://ingest.example.com/in',
    payload: { n },
  });
  return {
    delivery,
    batch: `batch/acme/b-${n}`,
    heldAt: 0,
    attempts: 0,
    firstAttemptAt: 0,
    lastAttemptAt: null,
    lastError: null,
    attemptLog: [],
  };
}

/** A client whose hold updates wait until `answer()`; records the messages of each update. */
function fakeClient() {
  const updates: string[][] = [];
  const pending: Array<() => void> = [];
  const client = {
    workflow: {
      executeUpdateWithStart: (_update: unknown, { args: [messages] }: { args: [HeldMessage[]] }) => {
        updates.push(messages.map((m) => m.delivery.messageId));
        return new Promise((resolve) => pending.push(() => resolve({ held: messages.length, already: 0 })));
      },
    },
  } as unknown as Client;
  const answer = async () => {
    for (const next of pending.splice(0)) next();
    await new Promise((r) => setImmediate(r));
  };
  return { client, updates, answer };
}

const lingered = () => new Promise((r) => setTimeout(r, 5));

test('batches that come while a hand-in is in flight go to the hold together, in one update after it', async () => {
  const { client, updates, answer } = fakeClient();
  const intake = new HoldIntake(client, 'q', 0);
  const first = intake.hold('acme', 'ingest.example.com', [held(1)]);
  await lingered();
  const later = [intake.hold('acme', 'ingest.example.com', [held(2)]), intake.hold('acme', 'ingest.example.com', [held(3), held(4)])];
  expect(updates).toEqual([['m-1']]);
  await answer();
  expect(updates).toEqual([['m-1'], ['m-2', 'm-3', 'm-4']]);
  await answer();
  const holdId = (await first).holdId;
  expect(holdId).toMatch(/^hold\//);
  for (const answered of await Promise.all(later)) expect(answered.holdId).toBe(holdId);
});

test('each endpoint has its own hand-in in flight', async () => {
  const { client, updates, answer } = fakeClient();
  const intake = new HoldIntake(client, 'q', 0);
  const both = [intake.hold('acme', 'a.example.com', [held(1)]), intake.hold('acme', 'b.example.com', [held(2)])];
  await lingered();
  expect(updates).toEqual([['m-1'], ['m-2']]);
  await answer();
  await Promise.all(both);
});

test('batches that come within the linger go in the first hand-in together', async () => {
  const { client, updates, answer } = fakeClient();
  const intake = new HoldIntake(client, 'q', 20);
  const all = [intake.hold('acme', 'ingest.example.com', [held(1)]), intake.hold('acme', 'ingest.example.com', [held(2)])];
  expect(updates).toEqual([]);
  await new Promise((r) => setTimeout(r, 40));
  expect(updates).toEqual([['m-1', 'm-2']]);
  await answer();
  await Promise.all(all);
});
