/**
 * An endpoint disabled while its `endpoint.disabled` event cannot be announced yet (the worker's activity slots
 * busy, or the activity slow): the disable is answered at once and holds, and the event goes once the
 * activity runs. The announcing activity is a stub that waits to be let go.
 */
import { randomUUID } from 'node:crypto';
import { Redeliver } from '../../src/client/index';
import type { OperationalEvent } from '../../src/endpoints/operational-events';
import { useStubbedWorker } from '../support/stubbed-worker';
import { waitFor } from '../support/wait';

const announced: OperationalEvent[][] = [];
let letGo: () => void = () => undefined;
const held = new Promise<void>((resolve) => (letGo = resolve));
const w = useStubbedWorker(
  {
    announceEvents: async (events: OperationalEvent[]) => {
      await held;
      announced.push(events);
      return events.map((e) => e.id);
    },
  },
  () => letGo(),
);

test('disable answers at once while its event waits for the announcing activity; the event goes once, after', async () => {
  const redeliver = new Redeliver(w.client, { taskQueue: w.taskQueue, singleSubmit: 'workflow' });
  const endpoint = redeliver.endpoint(`https://disabled-${randomUUID().slice(0, 8)}.example.com/in`);
  const control = await endpoint.disable('retired');
  expect(control.mode).toMatchObject({ state: 'disabled', reason: 'retired' });
  // answered, though the activity that announces it has not returned
  expect(announced).toHaveLength(0);
  expect((await endpoint.control()).mode).toMatchObject({ state: 'disabled' });

  letGo();
  const sent = await waitFor(
    async () => announced.flat(),
    (events) => events.length > 0,
    20_000,
    'the endpoint.disabled event',
  );
  expect(sent.map((e) => e.type)).toEqual(['endpoint.disabled']);
  expect(sent[0]!.data).toMatchObject({ state: 'disabled', reason: 'retired' });
});
