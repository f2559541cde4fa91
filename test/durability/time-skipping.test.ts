/**
 * Days in seconds: deliveries that wait for hours, days and weeks, on the Java time-skipping test server
 * (fetched from Maven Central, test/support/time-skipping.ts). Every attempt is a real HTTP request to a
 * loopback receiver; only the waits between them are skipped. Times below are the server's clock.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { Redeliver, type DeliveryHandle } from '../../src/client';
import type { DeliveryInput, DeliveryResult } from '../../src/delivery/types';
import { backoffWindow } from '../../src/policy/backoff';
import { defaultPolicy } from '../../src/policy/defaults';
import { createHttpAgent } from '../../src/transports/http';
import { eventsPerAttemptCycle, runsOf, timeline, type Run } from '../support/histories';
import { startReceiver, type Receiver } from '../support/receiver';
import { quietRuntime } from '../support/temporal';
import { startTimeSkippingServer, type TimeSkippingServer } from '../support/time-skipping';
import { waitFor } from '../support/wait';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Temporal's history size warning: no run of a delivery may reach it. */
const TEMPORAL_WARNING_EVENTS = 10_240;
/** The workflow's default continue-as-new threshold. */
const HISTORY_LIMIT = 4_000;
/**
 * Between a timer firing and the next attempt's activity being scheduled, the workflow runs one
 * workflow task: the server's clock runs at real speed then (time skipping is locked while a task is
 * outstanding), so the gap is that task's real time. The spec's target for firing on time is a second.
 */
const ON_TIME_MS = SECOND;

let server: TimeSkippingServer;
let receiver: Receiver;
let worker: Worker;
let running: Promise<void>;
let redeliver: Redeliver;
/** `REDELIVER_HISTORY_JITTER=full` runs the 14 days with the default full jitter: twice the attempts (a benchmark). */
const JITTER = (process.env.REDELIVER_HISTORY_JITTER ?? 'none') as 'none' | 'full';
const http = createHttpAgent({ allow: ['loopback'] });

beforeAll(async () => {
  quietRuntime();
  [server, receiver] = await Promise.all([startTimeSkippingServer({ logFile: `${process.env.REDELIVER_TEST_DIR ?? '/tmp'}/time-skipping-server.log` }), startReceiver()]);
  const taskQueue = `durability-${randomUUID()}`;
  worker = await Worker.create({
    connection: server.env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: process.env.REDELIVER_TEST_BUNDLE! },
    activities: createActivities({ http }),
  });
  running = worker.run();
  redeliver = new Redeliver(server.env.client, { taskQueue });
}, 5 * MINUTE);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await http.close();
  await receiver?.close();
  await server?.stop();
});

const submit = (path: string, input: Partial<DeliveryInput> & Pick<DeliveryInput, 'kind'>): Promise<DeliveryHandle> =>
  redeliver.submit({ tenant: 'acme', device: 'sensor-1', messageId: randomUUID(), payload: { t: 21.5 }, target: `${receiver.url}${path}`, ...input } as DeliveryInput);

const down = (path: string) => receiver.route(path, () => ({ status: 503 }));

/** Every planned wait lies within the policy's bounds for its attempt: [min, window(n)]. */
function expectWaitsWithinPolicy(waits: number[], policy: { min: number; initial: number; multiplier: number; max: number }) {
  const outside = waits.flatMap((wait, i) => {
    const window = Math.max(policy.min, backoffWindow(policy, i + 1));
    return wait < policy.min || wait > window ? [{ afterAttempt: i + 1, wait, window }] : [];
  });
  expect(outside).toEqual([]);
}

/** Each attempt came when its wait ended: never before, and within ON_TIME_MS after. */
function expectAttemptsOnTime(t: ReturnType<typeof timeline>) {
  expect(t.plannedAt).toHaveLength(t.scheduledAt.length - 1);
  const offPlan = t.plannedAt.flatMap((planned, i) => {
    const lateMs = t.scheduledAt[i + 1]! - planned;
    return lateMs < 0 || lateMs > ON_TIME_MS ? [{ attempt: i + 2, lateMs }] : [];
  });
  expect(offPlan).toEqual([]);
}

/** The attempt numbers the receiver saw for a message: 1..n, each once, across every run. */
function expectAttemptNumbers(messageId: string, n: number) {
  expect(receiver.of(messageId).map((r) => r.attempt)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
}

function expectCarriedAcrossRuns(runs: Run[], result: DeliveryResult) {
  let attemptsBefore = 0;
  for (const [i, run] of runs.entries()) {
    const carried = run.input.carried;
    if (i === 0) {
      expect(carried).toBeUndefined();
    } else {
      // the next run starts with what the last one knew: the message, attempts, first attempt, last error, pause
      expect(run.input.delivery).toEqual(runs[0]!.input.delivery);
      expect(carried).toMatchObject({ run: i + 1, attempts: attemptsBefore, firstAttemptAt: Date.parse(result.firstAttemptAt!), pause: null });
      expect(carried!.lastError).toMatchObject({ class: 'server', code: 'http-503', attempt: attemptsBefore });
    }
    attemptsBefore += run.events.filter((e) => e.activityTaskScheduledEventAttributes).length;
  }
}

test('an event whose endpoint is down for 3 days is delivered when it recovers, its attempts spaced as the policy says', async () => {
  const { env } = server;
  down('/recovers');
  const handle = await submit('/recovers', { kind: 'event' });
  await env.sleep(3 * DAY);
  const recoveredAt = await env.currentTimeMs();
  receiver.route('/recovers', () => ({ status: 202 }));
  const result = await handle.result();

  expect(result).toMatchObject({ outcome: 'delivered', lastError: { class: 'server', code: 'http-503' } });
  const seen = receiver.of(result.messageId);
  expect(seen).toHaveLength(result.attempts);
  expect(seen.slice(0, -1).every((r) => r.outcome === 503)).toBe(true);
  expect(seen[seen.length - 1]!.outcome).toBe(202);
  expectAttemptNumbers(result.messageId, result.attempts);

  const runs = await runsOf(server.env.client, handle.deliveryId);
  const t = timeline(runs);
  expect(t.scheduledAt).toHaveLength(result.attempts);
  expectWaitsWithinPolicy(t.waits, defaultPolicy('event'));
  expectAttemptsOnTime(t);
  // failing until the recovery, and delivered by the first attempt after it: within one capped wait
  const delivered = t.scheduledAt[t.scheduledAt.length - 1]!;
  expect(t.scheduledAt[t.scheduledAt.length - 2]!).toBeLessThan(recoveredAt);
  expect(delivered).toBeGreaterThanOrEqual(recoveredAt);
  expect(delivered - recoveredAt).toBeLessThanOrEqual(defaultPolicy('event').max + ON_TIME_MS);
  expect(delivered - t.scheduledAt[0]!).toBeGreaterThanOrEqual(3 * DAY);

  // How many attempts 3 days hold: past the first 12 (the window grows to the 300 s cap), full jitter
  // draws each wait uniformly from [0, 300 s] — mean 150 s, standard deviation 86.6 s — so n waits
  // fill 3 days for n ≈ 3 days / 150 s ≈ 1,728, give or take 0.577·√n ≈ 24. Six of those either side.
  const n = (3 * DAY) / 150_000;
  const sigma = 0.577 * Math.sqrt(n);
  expect(result.attempts).toBeGreaterThan(n - 6 * sigma);
  expect(result.attempts).toBeLessThan(n + 12 + 6 * sigma);
  // and it continued as new on the way, carrying what it knew
  expect(runs.length).toBeGreaterThanOrEqual(4);
  expectCarriedAcrossRuns(runs, result);
  expect(Math.abs(Date.parse(result.firstAttemptAt!) - t.scheduledAt[0]!)).toBeLessThan(ON_TIME_MS);
}, 5 * MINUTE);

test('telemetry QoS 1 expires at its 1 h max age, without a wait in vain', async () => {
  down('/telemetry-down');
  const handle = await submit('/telemetry-down', { kind: 'telemetry' });
  const result = await handle.result();

  expect(result).toMatchObject({ outcome: 'expired', lastError: { code: 'http-503' } });
  expect(result.reason).toMatch(/would fall after the max age of 1 h/);
  const t = timeline(await runsOf(server.env.client, handle.deliveryId));
  const first = t.scheduledAt[0]!;
  const last = t.scheduledAt[t.scheduledAt.length - 1]!;
  expect(receiver.of(result.messageId)).toHaveLength(result.attempts);
  expectWaitsWithinPolicy(t.waits, defaultPolicy('telemetry'));
  expectAttemptsOnTime(t);
  // no attempt after the max age; the last one within one capped wait of it (the next would have crossed it)
  expect(last).toBeLessThanOrEqual(first + HOUR);
  expect(last).toBeGreaterThan(first + HOUR - defaultPolicy('telemetry').max - ON_TIME_MS);
  // and it ended right after that last attempt instead of sleeping towards a bound it could not meet
  expect(t.closedAt - last).toBeLessThan(ON_TIME_MS + 10 * SECOND);
  expect(t.waits).toHaveLength(result.attempts - 1);
}, 2 * MINUTE);

test("a command response retries past the default 5 min and expires at its command's deadline", async () => {
  down('/command-down');
  const deadline = (await server.env.currentTimeMs()) + 2 * HOUR;
  const handle = await submit('/command-down', { kind: 'command-response', command: { requestId: 'req-1', deadline } });
  const result = await handle.result();

  expect(result).toMatchObject({ outcome: 'expired', lastError: { code: 'http-503' } });
  expect(result.reason).toContain(`would fall after the deadline ${new Date(deadline).toISOString()}`);
  const t = timeline(await runsOf(server.env.client, handle.deliveryId));
  const last = t.scheduledAt[t.scheduledAt.length - 1]!;
  expect(t.scheduledAt[0]! + 5 * MINUTE).toBeLessThan(last);
  expect(last).toBeLessThanOrEqual(deadline);
  expect(last).toBeGreaterThan(deadline - defaultPolicy('command-response').max - ON_TIME_MS);
  expect(t.closedAt).toBeLessThanOrEqual(deadline);
  expectWaitsWithinPolicy(t.waits, defaultPolicy('command-response'));
  expectAttemptsOnTime(t);
}, 2 * MINUTE);

test('maxAttempts exhausts: exactly that many attempts, then a dead letter at once', async () => {
  down('/exhausts');
  const handle = await submit('/exhausts', { kind: 'event', policy: { maxAttempts: 15 } });
  const result = await handle.result();

  expect(result).toMatchObject({ outcome: 'exhausted', attempts: 15, lastError: { code: 'http-503', attempt: 15 } });
  expect(result.reason).toMatch(/^15 of 15 attempts made/);
  expectAttemptNumbers(result.messageId, 15);
  const t = timeline(await runsOf(server.env.client, handle.deliveryId));
  expect(t.waits).toHaveLength(14);
  expectWaitsWithinPolicy(t.waits, defaultPolicy('event'));
  expectAttemptsOnTime(t);
  expect(t.closedAt - t.scheduledAt[14]!).toBeLessThan(10 * SECOND);
}, 2 * MINUTE);

test('a paused delivery continues as new still paused; paused days do not age it', async () => {
  // attempt 1 answers slowly, and the pause lands meanwhile; attempt 1 then ends the run (a tiny history
  // limit), so the pause must travel to the next run with the rest. Attempt 2, after two paused days,
  // fails too: had those days counted, the wait after it would have found the 1 h max age long past.
  receiver.route('/paused', ({ nth }) => (nth === 1 ? { status: 503, delayMs: 2_000 } : nth === 2 ? { status: 503 } : { status: 202 }));
  const short = new Redeliver(server.env.client, { taskQueue: redeliver.taskQueue, historyLimit: 10 });
  const messageId = randomUUID();
  const handle = await short.submit({ kind: 'telemetry', tenant: 'acme', device: 'sensor-1', messageId, payload: 1, target: `${receiver.url}/paused` });
  await waitFor(async () => receiver.of(messageId).length, (n) => n === 1, 10_000, 'attempt 1 at the receiver');
  expect(await handle.pause('endpoint maintenance')).toMatchObject({ state: 'attempting', attempts: 1 });

  // the next run is paused, with the carried attempt, and stays so for two days (telemetry ages out after 1 h)
  await waitFor(async () => (await runsOf(server.env.client, handle.deliveryId)).length, (n) => n === 2, 15_000, 'the second run');
  const runs = await runsOf(server.env.client, handle.deliveryId);
  expect(runs[1]!.input.carried).toMatchObject({ attempts: 1, pause: { reason: 'endpoint maintenance' }, lastError: { code: 'http-503' } });
  await waitFor(() => handle.status(), (st) => st.state === 'paused', 10_000, 'paused in the second run');
  await server.env.sleep(2 * DAY);
  expect(await handle.status()).toMatchObject({ state: 'paused', attempts: 1, pause: { reason: 'endpoint maintenance' } });
  expect(receiver.of(messageId)).toHaveLength(1);

  await handle.resume();
  expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 3 });
}, 2 * MINUTE);

test(`a delivery retrying for 14 days at the 300 s cap stays far below ${TEMPORAL_WARNING_EVENTS} events in every run (jitter ${JITTER})`, async () => {
  down('/fortnight');
  const handle = await submit('/fortnight', { kind: 'event', policy: { jitter: JITTER, maxAge: '14 days' } });
  const result = await handle.result();
  const runs = await runsOf(server.env.client, handle.deliveryId);
  const t = timeline(runs);

  expect(result).toMatchObject({ outcome: 'expired', lastError: { code: 'http-503' } });
  expect(t.scheduledAt).toHaveLength(result.attempts);
  expectAttemptNumbers(result.messageId, result.attempts);
  // the last attempt inside the 14 days, and the next wait (at most the cap) would have crossed them
  const [first, last] = [t.scheduledAt[0]!, t.scheduledAt[t.scheduledAt.length - 1]!];
  expect(last).toBeLessThanOrEqual(first + 14 * DAY);
  expect(last + defaultPolicy('event').max).toBeGreaterThan(first + 14 * DAY);
  expectWaitsWithinPolicy(t.waits, defaultPolicy('event'));
  // 11 growing waits (0.2 s … 204.8 s), then every wait at the 300 s cap: about 4,040 attempts
  if (JITTER === 'none') expect(t.waits.slice(11).every((w) => w === 300_000)).toBe(true);

  const sizes = runs.map((r) => r.events.length);
  expect(Math.max(...sizes)).toBeLessThan(TEMPORAL_WARNING_EVENTS);
  // a run continues as new at the first failed attempt past the limit: at most one attempt's events over it
  expect(Math.max(...sizes)).toBeLessThanOrEqual(HISTORY_LIMIT + 15);
  expect(runs.length).toBeGreaterThanOrEqual(Math.ceil(sizes.reduce((a, b) => a + b, 0) / (HISTORY_LIMIT + 15)));
  expectCarriedAcrossRuns(runs, result);

  // what one failed attempt costs in history, measured in the middle of a run
  const cycle = eventsPerAttemptCycle(runs[1]!);
  expect(cycle).toEqual([
    'activityTaskScheduled', 'activityTaskStarted', 'activityTaskFailed',
    'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskCompleted', 'upsertWorkflowSearchAttributes', 'timerStarted',
    'timerFired', 'workflowTaskScheduled', 'workflowTaskStarted', 'workflowTaskCompleted',
  ]);
  // the same 12 on the dev server: the replay fixtures were recorded there
  const fixture = JSON.parse(readFileSync(path.join(__dirname, '..', 'histories', 'deliveryWorkflow_exhausted.json'), 'utf8')) as { events: { eventType: string }[] };
  const scheduled = fixture.events.flatMap((e, i) => (e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' ? [i] : []));
  expect(scheduled[1]! - scheduled[0]!).toBe(cycle.length);
  const figures = {
    jitter: JITTER,
    attempts: result.attempts,
    runs: runs.length,
    maxEventsPerRun: Math.max(...sizes),
    totalEvents: sizes.reduce((a, b) => a + b, 0),
    eventsPerAttempt: cycle.length,
  };
  process.stderr.write(`14-day history: ${JSON.stringify(figures)}\n`);
}, 10 * MINUTE);
