import { randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { endpointStatusQuery, endpointWorkflowId } from '../../../src/contract';
import { freePort } from '../../support/ports';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/*
 * An endpoint that failed once and is sent nothing more (issue 31): its workflow turns it failing by time
 * alone (FAILING_AFTER_MS after the attempt) and then waits, its history flat, for a report or its idle close.
 * Before the fix it woke every millisecond (a timer of 1 ms each time): 467 events in 90 s.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness(testAddress());
});
afterAll(async () => {
  await h?.stop();
});

/** The endpoint workflow's timers that were started for a few ms or less. */
const shortTimers = (events: temporal.api.history.v1.IHistoryEvent[]) =>
  events.filter((e) => {
    const d = e.timerStartedEventAttributes?.startToFireTimeout;
    return d && Number(d.seconds ?? 0) === 0 && (d.nanos ?? 0) <= 5_000_000;
  });

test('one failed attempt to a dead port: failing by time alone, then a flat history', async () => {
  const port = await freePort();
  const endpoint = `127.0.0.1:${port}`;
  const handle = await h.redeliver.submit({
    kind: 'telemetry',
    qos: 0,
    tenant: 'acme',
    device: `idle-${randomUUID().slice(0, 8)}`,
    messageId: randomUUID(),
    target: `http://${endpoint}/x`,
    payload: { t: 1 },
  });
  expect((await handle.result()).attempts).toBe(1);
  const workflow = h.client.workflow.getHandle(endpointWorkflowId(endpoint, h.taskQueue));
  // no attempt after the first: the spell turns failing by time alone, and the search attribute says so
  await waitFor(
    async () => (await workflow.describe().catch(() => undefined))?.searchAttributes.EndpointHealth,
    (state) => state?.[0] === 'failing',
    30_000,
    'the endpoint to turn failing',
  );
  // the turn that saw it fail announces it (an activity) and then waits: count from when it waits on a timer
  const before = await waitFor(
    async () => (await workflow.fetchHistory()).events ?? [],
    (events) => events.at(-1)?.timerStartedEventAttributes != null,
    30_000,
    'the endpoint workflow to wait on a timer',
  );
  // the window the spin showed in: about 5 events a second before the fix
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const after = (await workflow.fetchHistory()).events ?? [];
  expect(shortTimers(after)).toEqual([]);
  expect(after.length).toBe(before.length);
  expect(await workflow.query(endpointStatusQuery, Date.now())).toMatchObject({ state: 'failing', attemptsLastMinute: 1 });
}, 60_000);
