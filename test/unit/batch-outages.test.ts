import type { FirstAttempt, HeldMessage, MessageResult } from '../../src/contract';
import { Outages } from '../../src/activities/batch-outages';
import { validateDelivery } from '../../src/validation/delivery';
import type { HoldIntake } from '../../src/starter/hold-intake';
import type { RecoveryPacer } from '../../src/worker-services/pacer';

/*
 * A batch's failed first attempts in an outage (activities/batch-outages.ts): which wait in the hold and which become
 * deliveries of their own, decided with what the pacer knows once the batch's sends are done.
 */

const T0 = Date.parse('2026-11-27T12:00:00Z');
const ENDPOINT = 'ingest.example.com:443';
const deliveries = [1, 2, 3].map((n) =>
  validateDelivery({ kind: 'event', tenant: 'acme', device: 'd1', messageId: `m${n}`, target: `https://${ENDPOINT}/in`, payload: { n } }),
);
const input = { batchId: 'b1', tenant: 'acme', deliveries };

function outagesWith(pacer: { holds: boolean }) {
  const handedIn: HeldMessage[] = [];
  const intake = {
    hold: async (_tenant: string, _endpoint: string, messages: HeldMessage[]) => {
      handedIn.push(...messages);
      return { holdId: `hold/acme/${ENDPOINT}/0` };
    },
  } as unknown as HoldIntake;
  const fake = { holds: () => pacer.holds, state: () => (pacer.holds ? 'failing' : 'healthy') } as unknown as RecoveryPacer;
  return { outages: new Outages(fake, intake, input, undefined, () => T0), handedIn };
}

const failed = (code: string, retryable = true): FirstAttempt => ({
  startedAt: T0,
  endedAt: T0 + 5,
  failure: { class: retryable ? 'server' : 'client', retryable, code, reason: code, durationMs: 5 },
});

test("an outage's first failure looked lone when it came; its endpoint failing by the batch's end, it waits in the hold", async () => {
  const pacer = { holds: false };
  const { outages, handedIn } = outagesWith(pacer);
  expect(await outages.holdsAfter(0, failed('http-503'))).toBe(true);
  // the batch's next sends to the endpoint fail alike: the pacer holds from the second
  pacer.holds = true;
  expect(await outages.holdsAfter(1, failed('http-503'))).toBe(true);
  expect(outages.settle()).toEqual([]);
  const done: Record<number, MessageResult> = {};
  await outages.handIn(done);
  expect(handedIn.map((m) => m.delivery.messageId)).toEqual(['m2', 'm1']);
  expect(Object.values(done).map((r) => r.disposition)).toEqual(['held', 'held']);
});

test('a failure that stayed lone (the endpoint answers the others) is the message’s own delivery; a 4xx is at once', async () => {
  const { outages, handedIn } = outagesWith({ holds: false });
  expect(await outages.holdsAfter(0, failed('http-503'))).toBe(true);
  expect(await outages.holdsAfter(1, failed('http-404', false))).toBe(false);
  expect(outages.settle().map(({ index }) => index)).toEqual([0]);
  await outages.handIn({});
  expect(handedIn).toEqual([]);
});
