/**
 * Faults, on a real Temporal dev server of this file's own that keeps its state in a SQLite file, so
 * that it can be killed and started again on the same file: a worker killed mid-attempt, the server
 * killed while deliveries wait, an endpoint that flaps, an endpoint slower than the attempt timeout.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { startDevServer, type DevServer } from '../../../src/dev/dev-server';
import { runWorker } from '../../../src/worker';
import { eventTime, runsOf } from '../../support/histories';
import { freePort } from '../../support/ports';
import { startReceiver, type Receiver } from '../../support/receiver';
import { createTestWorker, startHarness, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';
import { spawnWorker } from '../../support/worker-process';

const dir = mkdtempSync(path.join(process.env.REDELIVER_TEST_DIR ?? tmpdir(), 'faults-'));
const dbFile = path.join(dir, 'temporal.db');
let port: number;
let server: DevServer;
let h: Harness;
let receiver: Receiver;

const startServer = () => startDevServer({ port, uiPort: null, dbFile, logFile: path.join(dir, 'temporal.log') });

beforeAll(async () => {
  port = await freePort();
  [server, receiver] = await Promise.all([startServer(), startReceiver()]);
  h = await startHarness(server.address);
}, 90_000);

afterAll(async () => {
  await h?.stop();
  await receiver?.close();
  await server?.stop();
});

const delivery = (pathname: string, input: Partial<DeliveryInput> = {}): DeliveryInput =>
  ({
    kind: 'event',
    tenant: 'acme',
    device: `dev-${randomUUID().slice(0, 8)}`,
    messageId: randomUUID(),
    payload: { n: 1 },
    target: `${receiver.url}${pathname}`,
    ...input,
  }) as DeliveryInput;

const executions = async (client: Harness['client'], workflowId: string) => {
  let n = 0;
  for await (const _ of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) n++;
  return n;
};

/** Whether the server holds the heartbeat that saves attempt `n` as sent: the workflow's pending activity's, or the standalone first attempt's. */
async function savedAsSent(deliveryId: string, n: number): Promise<boolean> {
  const converter = h.client.options.loadedDataConverter;
  const saved = await h.client.workflow
    .getHandle(deliveryId)
    .describe()
    .then(async (d) => {
      const payloads = d.raw.pendingActivities?.find((a) => a.heartbeatDetails?.payloads?.length)?.heartbeatDetails?.payloads;
      return payloads ? await decodeFromPayloadsAtIndex<unknown>(converter, 0, payloads) : undefined;
    })
    .catch(async () => (await h.client.activity.getHandle(deliveryId).describe({ includeHeartbeatDetails: true })).getHeartbeatDetails());
  const text = JSON.stringify(saved ?? {});
  return n === 1 ? text.includes('"sentAt"') : text.includes(`"inFlight":{"attempt":${n}`);
}

/**
 * The worker is killed with SIGKILL while the receiver holds attempt `killed` (accepting it after the worker
 * is dead: its answer is lost). Attempt 1 is the workflow's own activity, later ones the retrying activity's;
 * both heartbeat an attempt as sent before sending it, so Temporal's retry of the lost one knows it may have
 * arrived: counted, as `worker-lost` (attempt 1 was a `timeout` before it heartbeat, which said less).
 */
// the lost attempt is noticed by its timeout + 5 s, then the workflow task waits out the dead worker's sticky queue
const WORKFLOW_TAKEOVER_MS = 1_000 + 5_000 + 10_000 + 3_000;
// a single submit's standalone first attempt: by its heartbeat timeout (20 s), then the server's retry after 1 s
const STANDALONE_TAKEOVER_MS = 20_000 + 1_000 + 3_000;

test.each([
  { killed: 1, path: 'workflow', lostAs: { class: 'connection', code: 'worker-lost', attempt: 1 }, takeoverMs: WORKFLOW_TAKEOVER_MS },
  { killed: 2, path: 'workflow', lostAs: { class: 'connection', code: 'worker-lost', attempt: 2 }, takeoverMs: WORKFLOW_TAKEOVER_MS },
  { killed: 1, path: 'standalone', lostAs: { class: 'connection', code: 'worker-lost', attempt: 1 }, takeoverMs: STANDALONE_TAKEOVER_MS },
] as const)(
  'a worker killed with SIGKILL during attempt $killed ($path first attempt): the delivery still completes, the receiver sees one message id, one delivery',
  async ({ killed, path: singleSubmit, lostAs, takeoverMs }) => {
    const taskQueue = `kill-${randomUUID()}`;
    const redeliver = new Redeliver(h.client, { taskQueue, singleSubmit });
    receiver.route(`/kill-${killed}`, ({ nth }) =>
      nth < killed ? { status: 503 } : nth === killed ? { status: 202, delayMs: 900 } : { status: 202 },
    );
    const doomed = spawnWorker({ address: server.address, taskQueue });
    await doomed.ready;
    const input = delivery(`/kill-${killed}`, { target: { url: `${receiver.url}/kill-${killed}`, timeout: '1s' } });
    const handle = await redeliver.submit(input);
    await waitFor(
      async () => receiver.of(input.messageId!).length,
      (n) => n === killed,
      30_000,
      `attempt ${killed} at the receiver`,
    );
    // killed once the server has the attempt saved as sent (a heartbeat, sent beside the request: on a loaded
    // machine it may come after the request does): a worker lost before that is one whose resend is not counted
    await waitFor(() => savedAsSent(handle.deliveryId, killed), Boolean, 800, `attempt ${killed} saved as sent`);
    await doomed.kill('SIGKILL');
    const killedAt = Date.now();

    // another worker takes over. Temporal times the lost attempt out (its timeout + 5 s); for attempt 1 the
    // workflow task that follows first waits for the dead worker's sticky queue (the SDK's
    // stickyQueueScheduleToStartTimeout, 10 s), then goes to the shared queue, where the new worker retries
    const heir = await createTestWorker(server.address, taskQueue);
    const result = await runWorker(heir, handle.result());

    expect(result).toMatchObject({ outcome: 'delivered', attempts: killed + 1, lastError: lostAs });
    const seen = receiver.of(input.messageId!);
    // the same message again (a duplicate the receiver can drop by its id), never a different one; the attempt
    // numbers go on, the lost one counted
    expect(seen.map((r) => r.attempt)).toEqual(Array.from({ length: killed + 1 }, (_, i) => i + 1));
    expect(new Set(seen.map((r) => r.body))).toEqual(new Set([JSON.stringify(input.payload)]));
    expect(seen[killed]!.outcome).toBe(202);
    expect(seen[killed]!.at - killedAt).toBeLessThan(takeoverMs);
    await waitFor(
      () => executions(h.client, handle.deliveryId),
      (n) => n === 1,
      10_000,
      'one workflow execution',
    );
    expect((await runsOf(h.client, handle.deliveryId)).length).toBe(1);
  },
  90_000,
);

test('the dev server killed and restarted while deliveries wait: they resume, and fire on time', async () => {
  receiver.route('/restart', ({ nth }) => (nth === 1 ? { status: 503 } : { status: 202 }));
  const waits = [2_000, 15_000, 20_000];
  // one wait ends while the server is down, two after it is back
  const inputs = waits.map((wait) => delivery('/restart', { policy: { jitter: 'none', initial: wait, min: wait, max: wait } }));
  const handles = await Promise.all(inputs.map((i) => h.redeliver.submit(i)));
  // the plan before the crash: the first attempt's end plus the wait, which the retrying activity waits
  // out on the server (an activity retry with nextRetryDelay)
  const planned = await Promise.all(
    handles.map(async (handle, i) => {
      const status = await waitFor(
        () => handle.status(),
        (s) => s.state === 'waiting',
        15_000,
        'waiting',
      );
      const first = receiver.of(inputs[i]!.messageId!)[0]!;
      const plannedAt = Date.parse(status.nextAttemptAt!);
      expect(Math.abs(plannedAt - (first.at + waits[i]!))).toBeLessThan(1_000);
      return plannedAt;
    }),
  );

  const killedAt = Date.now();
  server.process.kill('SIGKILL');
  await once(server.process, 'exit');
  // stay down until the first one is overdue
  await new Promise((r) => setTimeout(r, planned[0]! + 500 - Date.now()));
  const restartedAt = Date.now();
  server = await startServer();
  const upAt = Date.now();
  // the test means something only if the server was back well before the later two were due
  expect(upAt).toBeLessThan(planned[1]! - 3_000);

  const results = await Promise.all(handles.map((handle) => handle.result()));
  for (const result of results) expect(result).toMatchObject({ outcome: 'delivered', attempts: 2 });
  const second = inputs.map((i) => receiver.of(i.messageId!)[1]!.at);
  // due while the server was down: sent as soon as the server and the worker were back
  expect(planned[0]!).toBeLessThan(restartedAt);
  expect(second[0]!).toBeGreaterThanOrEqual(restartedAt);
  expect(second[0]! - upAt).toBeLessThan(5_000);
  // due after the restart: on time. The retry's backoff ends on the server at its planned time; then one
  // activity task and a loopback request: tens of ms in most runs. One fresh-clone run on the loaded 2-core
  // machine saw both 4 s late (cause not established: docs/durability.md), so the bound here is 5 s
  process.stderr.write(
    `server killed for ${upAt - killedAt} ms (restart ${upAt - restartedAt} ms); the overdue attempt ${second[0]! - restartedAt} ms after the restart began; on-time lateness ${[1, 2].map((i) => second[i]! - planned[i]!).join(', ')} ms\n`,
  );
  for (const i of [1, 2]) {
    expect(second[i]!).toBeGreaterThanOrEqual(planned[i]!);
    expect(second[i]! - planned[i]!).toBeLessThan(5_000);
  }
}, 90_000);

test('an endpoint that flaps: every delivery lands in an up phase, exactly once', async () => {
  // down (503s and connection resets, in turn) until every delivery has failed once; from then on it
  // flaps: down 400 ms, up 200 ms, over and over
  const n = 20;
  const failedOnce = new Set<string>();
  let flappingSince: number | undefined;
  receiver.route('/flap', ({ messageId }) => {
    if (flappingSince === undefined) {
      failedOnce.add(messageId!);
      if (failedOnce.size === n) flappingSince = Date.now();
      return failedOnce.size % 2 ? { status: 503 } : { reset: true };
    }
    const elapsed = Date.now() - flappingSince;
    if (elapsed % 600 >= 400) return { status: 202 };
    return Math.floor(elapsed / 600) % 2 ? { reset: true } : { status: 503 };
  });
  const inputs = Array.from({ length: n }, () => delivery('/flap', { policy: { initial: '200ms', min: '100ms', max: '1s' } }));
  const handles = await h.redeliver.submitMany(inputs);
  const results = await Promise.all(handles.map((handle) => handle.result()));

  for (const [i, result] of results.entries()) {
    expect(result.outcome).toBe('delivered');
    expect(result.attempts).toBeGreaterThanOrEqual(2);
    expect(['http-503', 'net-ECONNRESET']).toContain(result.lastError?.code);
    const seen = receiver.of(inputs[i]!.messageId!);
    expect(seen).toHaveLength(result.attempts);
    expect(seen.filter((r) => r.outcome === 202)).toHaveLength(1);
    expect(seen[seen.length - 1]!.outcome).toBe(202);
  }
  const flapped = receiver.requests.filter((r) => r.path === '/flap');
  expect(flapped.some((r) => r.outcome === 'reset') && flapped.some((r) => r.outcome === 503)).toBe(true);
}, 60_000);

test('an endpoint slower than the attempt timeout: each attempt gives up at the timeout, then retries', async () => {
  receiver.route('/slow', ({ nth }) => (nth <= 2 ? { status: 202, delayMs: 2_500 } : { status: 202 }));
  const input = delivery('/slow', {
    target: { url: `${receiver.url}/slow`, timeout: '1s' },
    policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
  });
  const handle = await h.redeliver.submit(input);
  const result = await handle.result();

  expect(result).toMatchObject({ outcome: 'delivered', attempts: 3, lastError: { class: 'connection', code: 'timeout', attempt: 2 } });
  // the second slow answer is due 2.5 s after its request, after the delivery ended
  const seen = await waitFor(
    async () => receiver.of(input.messageId!),
    (s) => s.every((r) => r.outcome !== 'pending'),
    5_000,
    'the slow answers',
  );
  expect(seen.map((r) => r.attempt)).toEqual([1, 2, 3]);
  // the client hung up at 1 s, before the slow answers: those were never received, so nothing was delivered twice
  expect(seen.map((r) => r.outcome)).toEqual(['lost', 'lost', 202]);
  for (const i of [1, 2]) {
    const gap = seen[i]!.at - seen[i - 1]!.at;
    expect(gap).toBeGreaterThanOrEqual(1_000 + 200);
    // the 1 s timeout, the 200 ms wait (which Temporal's server rounds up towards its ~1 s timer
    // precision), and the dispatch of the next attempt: under 3.5 s even on the loaded 2-core machine
    expect(gap).toBeLessThan(3_500);
  }
  // the attempts' own durations in the history: the transport's 1 s timeout, not Temporal's 6 s one
  const [run] = await runsOf(h.client, handle.deliveryId);
  const started = run!.events.filter((e) => e.activityTaskStartedEventAttributes).map(eventTime);
  const failed = run!.events.filter((e) => e.activityTaskFailedEventAttributes).map(eventTime);
  for (const [i, end] of failed.entries()) {
    expect(end - started[i]!).toBeGreaterThanOrEqual(1_000);
    expect(end - started[i]!).toBeLessThan(2_000);
  }
}, 60_000);
