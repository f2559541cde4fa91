/**
 * The soak: thousands of deliveries to an endpoint that fails at random (5xx, connection resets, answers
 * slower than the attempt timeout), then the checks that nothing was lost — every delivery ended in
 * exactly one outcome, the receiver holds every delivered message id and no id that was not submitted,
 * and whatever it holds twice is explained by an answer the client had given up on. Run small by
 * test/integration/durability/soak.test.ts (in CI) and large by bench/soak.ts.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { DeliveryHandle, Redeliver } from '../src/client/index';
import { DeliveryControlError } from '../src/errors';
import { statusQuery, type RetryProgress } from '../src/contract';
import type { DeliveryInput, DeliveryResult, Outcome } from '../src/delivery/types';
import { randomFaults, type Receiver, type ReceivedRequest } from '../test/support/receiver';

export const OUTCOMES: Outcome[] = ['delivered', 'rejected', 'expired', 'exhausted', 'dropped', 'cancelled'];

export interface SoakOptions {
  redeliver: Redeliver;
  client: Client;
  receiver: Receiver;
  deliveries: number;
  /** Seeds the endpoint's faults (a hash of seed, message id and attempt number). */
  seed: string;
  /** Shares of failed answers; the rest is 202. Default 25 % 5xx, 10 % resets, 5 % too slow. */
  faults?: { serverError: number; reset: number; slow: number };
  /** Starts in flight at once. Default 32. */
  submitConcurrency?: number;
  /** How long all deliveries may take to end. */
  timeoutMs: number;
  log?: (line: string) => void;
}

export interface SoakFigures {
  deliveries: number;
  outcomes: Record<Outcome, number>;
  attempts: number;
  requests: number;
  /**
   * Message ids the receiver took more than once: it answered 2xx to an attempt after the client had
   * given up on it (a scripted slow answer, or a loaded machine), and then to the retry. At-least-once.
   */
  duplicateIds: number;
  /** Message ids the receiver took (answering after the client had given up) of deliveries that then ended without success. */
  heldNotDelivered: number;
  /** Deliveries whose attempt went twice with one number: Temporal ran its activity again after a run it lost (lostRuns: a stalled worker). */
  resentAfterTimeout: number;
  /** 2xx answers that never reached the client: it had given up on the attempt before they were written. */
  lateAnswers: number;
  faults: { serverError: number; reset: number; slow: number };
  seconds: { submit: number; total: number };
  deliveriesPerSecond: number;
}

export interface SoakReport {
  figures: SoakFigures;
  /** Every broken promise found; empty when nothing was lost. */
  problems: string[];
}

const ATTEMPT_TIMEOUT_MS = 500;
const SLOW_MS = 1_000;
const RETRY = { initial: '50ms', min: '20ms', max: '500ms' } as const;

/**
 * The mix of deliveries, by index: events bounded by 6 attempts (delivered or exhausted), telemetry
 * QoS 0 (delivered or dropped), telemetry QoS 1 bounded by a 1.5 s max age (delivered or expired),
 * and one in 50 cancelled right after submit (cancelled, or whatever it reached first).
 */
function inputOf(i: number, url: string, seed: string): DeliveryInput {
  const base = {
    tenant: 'soak',
    device: `device-${i % 97}`,
    messageId: `${seed}-${i}`,
    payload: { i },
    target: { url: `${url}/soak`, timeout: ATTEMPT_TIMEOUT_MS },
  };
  if (i % 10 === 8) return { ...base, kind: 'telemetry', qos: 0 };
  if (i % 10 === 9) return { ...base, kind: 'telemetry', qos: 1, policy: { ...RETRY, maxAge: '1500ms' } };
  return { ...base, kind: 'event', policy: { ...RETRY, maxAttempts: 6 } };
}
const cancels = (i: number) => i % 50 === 7;

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { redeliver, client, receiver, deliveries: n, seed } = options;
  const faults = options.faults ?? { serverError: 0.25, reset: 0.1, slow: 0.05 };
  const log = options.log ?? (() => undefined);
  receiver.route('/soak', randomFaults({ seed, ...faults, slowMs: SLOW_MS }));
  const inputs = Array.from({ length: n }, (_, i) => inputOf(i, receiver.url, seed));
  const problems: string[] = [];

  const started = Date.now();
  const handles: DeliveryHandle[] = new Array(n);
  // a cancel waits until its delivery has ended (up to a minute behind a busy worker): it runs beside the
  // submits, not in a submit lane, which it would hold idle while the rest of the soak waits behind it
  const cancelled: Promise<unknown>[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: options.submitConcurrency ?? 32 }, async () => {
      while (next < n) {
        const i = next++;
        handles[i] = await redeliver.submit(inputs[i]!);
        if (cancels(i))
          cancelled.push(
            handles[i].cancel().catch((err: unknown) => {
              if (!(err instanceof DeliveryControlError)) throw err; // it had ended already: fine
            }),
          );
      }
    }),
  );
  const submitted = Date.now();
  await Promise.all(cancelled);
  log(`submitted ${n} in ${((submitted - started) / 1000).toFixed(1)} s`);

  // every delivery ends: nothing is left running on the task queue
  const byQueue = `WorkflowType = 'deliveryWorkflow' AND TaskQueue = '${redeliver.taskQueue}'`;
  let lastLog = Date.now();
  for (;;) {
    const running = (await client.workflow.count(`${byQueue} AND ExecutionStatus = 'Running'`)).count;
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      log(`${((lastLog - started) / 1000).toFixed(0)} s: ${running} of ${n} still running`);
    }
    if (running === 0) break;
    if (Date.now() - started > options.timeoutMs) {
      problems.push(`${running} deliveries still running after ${options.timeoutMs / 1000} s`);
      break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const ended = Date.now();
  log(`all ended after ${((ended - started) / 1000).toFixed(1)} s`);

  // exactly one outcome each
  const results: DeliveryResult[] = new Array(n);
  let k = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (k < n) {
        const i = k++;
        results[i] = await handles[i]!.result();
      }
    }),
  );
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  for (const [i, result] of results.entries()) {
    if (!OUTCOMES.includes(result.outcome)) problems.push(`${inputs[i]!.messageId}: unknown outcome ${String(result.outcome)}`);
    else outcomes[result.outcome]++;
    if (result.messageId !== inputs[i]!.messageId) problems.push(`${inputs[i]!.messageId}: the result names ${result.messageId}`);
  }
  if (new Set(handles.map((h) => h.deliveryId)).size !== n) problems.push('two submissions share one delivery');
  // one workflow each, and the visibility store agrees with the results
  const total = (await client.workflow.count(byQueue)).count;
  if (total !== n) problems.push(`${total} workflows on the task queue for ${n} submissions`);
  for (const outcome of OUTCOMES) {
    const visible = (await client.workflow.count(`${byQueue} AND DeliveryState = '${outcome}'`)).count;
    if (visible !== outcomes[outcome]) problems.push(`DeliveryState = '${outcome}': ${visible} in the UI, ${outcomes[outcome]} results`);
  }

  // the receiver: every delivered id, no stranger, and every second copy explained
  const submittedIds = new Set(inputs.map((i) => i.messageId!));
  const byId = new Map<string, ReceivedRequest[]>();
  for (const r of receiver.requests.filter((r) => r.path === '/soak')) {
    if (!r.messageId || !submittedIds.has(r.messageId))
      problems.push(`the receiver got message id ${r.messageId}, which was never submitted`);
    else byId.set(r.messageId, [...(byId.get(r.messageId) ?? []), r]);
  }
  // the receiver took the message whenever it answered 2xx — even if the client had given up by then
  const held = (r: ReceivedRequest) => 'status' in r.reply && r.reply.status < 300;
  const show = (r: ReceivedRequest) =>
    `#${r.attempt}: ${'reset' in r.reply ? 'reset' : `${r.reply.status}${r.reply.delayMs ? ` after ${r.reply.delayMs} ms` : ''}`} → ${r.outcome}`;
  let duplicateIds = 0;
  let heldNotDelivered = 0;
  let resentAfterTimeout = 0;
  let attempts = 0;
  for (const [i, result] of results.entries()) {
    const id = inputs[i]!.messageId!;
    const seen = byId.get(id) ?? [];
    attempts += result.attempts;
    const numbers = seen.map((r) => r.attempt);
    const expected = Array.from({ length: result.attempts }, (_, a) => a + 1);
    // every attempt sent reached the receiver exactly once, in order, and no other; a cancelled delivery's last may
    // not have. An attempt whose connection did not open within its time sent nothing (net-ETIMEDOUT; on CI's loaded
    // machine 5 in ~9,600 attempts): the delivery's own attempt log says which, read only when one is missing
    const wanted = (sent: number[], got: unknown[]) => (result.outcome === 'cancelled' ? sent.slice(0, got.length) : sent);
    const same = (sent: number[], got: (number | undefined)[] = numbers) => JSON.stringify(got) === JSON.stringify(wanted(sent, got));
    if (!same(expected)) {
      const { attemptLog } = await handles[i]!.workflow.query(statusQuery);
      // an attempt lost with its worker (worker-lost) may have arrived or not: either is within the promise
      const lost = attemptLog.filter((a) => a.code === 'worker-lost').map((a) => a.attempt);
      const unsent = new Set(attemptLog.filter((a) => a.code === 'net-ETIMEDOUT').map((a) => a.attempt));
      if (lost.length > 0 && !same(expected.filter((a) => !unsent.has(a)))) for (const a of lost) unsent.add(a);
      // an attempt's activity that overran its time (a stalled worker) is run again by Temporal and may send the same
      // attempt again, before its heartbeat said it was sent: at-least-once, explained by the runs it lost (lostRuns)
      const resent = await lostRuns(handles[i]!);
      const once = numbers.filter((n, j) => j === 0 || n !== numbers[j - 1]);
      if (
        resent > 0 &&
        numbers.length - once.length <= resent &&
        same(
          expected.filter((a) => !unsent.has(a)),
          once,
        )
      )
        resentAfterTimeout++;
      else if (!same(expected.filter((a) => !unsent.has(a))))
        problems.push(
          `${id} (${result.outcome}, attempts ${attemptLog.map((a) => `#${a.attempt} ${a.code}`).join(', ')}): the receiver saw attempts ${JSON.stringify(numbers)}`,
        );
    }
    // delivered: the receiver holds it, from the attempt the workflow saw succeed (a copy of it, where one went twice)
    const answered = (r: ReceivedRequest) => held(r) && r.outcome === (r.reply as { status: number }).status;
    if (result.outcome === 'delivered' && !seen.some((r) => r.attempt === result.attempts && answered(r))) {
      problems.push(`${id} is delivered, but the receiver did not accept its attempt ${result.attempts}: ${seen.map(show).join(', ')}`);
    }
    const copies = seen.filter(held).length;
    if (copies > 1) duplicateIds++;
    if (copies > 0 && result.outcome !== 'delivered') heldNotDelivered++;
  }
  const figures: SoakFigures = {
    deliveries: n,
    outcomes,
    attempts,
    requests: receiver.requests.filter((r) => r.path === '/soak').length,
    duplicateIds,
    heldNotDelivered,
    resentAfterTimeout,
    lateAnswers: receiver.requests.filter((r) => r.path === '/soak' && held(r) && r.outcome !== 202).length,
    faults,
    seconds: { submit: round((submitted - started) / 1000), total: round((ended - started) / 1000) },
    deliveriesPerSecond: round(n / ((ended - started) / 1000)),
  };
  return { figures, problems: problems.slice(0, 50).concat(problems.length > 50 ? [`… and ${problems.length - 50} more`] : []) };
}

const round = (x: number) => Math.round(x * 10) / 10;

/**
 * Runs of the delivery's activities that may have sent an attempt no later run knew of, per activity: the runs of
 * the retrying activity that left no save (`unseenRuns` in its result: one that overran its time on a stalled
 * worker, its heartbeat never sent), else a run that timed out just before the last (its started event says so).
 */
export async function lostRuns(handle: DeliveryHandle): Promise<number> {
  const { events } = await handle.workflow.fetchHistory();
  const byActivity = new Map<string, { timedOut: number; unseen: number }>();
  const of = (scheduled: unknown) => {
    const key = String(scheduled);
    if (!byActivity.has(key)) byActivity.set(key, { timedOut: 0, unseen: 0 });
    return byActivity.get(key)!;
  };
  for (const e of events ?? []) {
    const started = e.activityTaskStartedEventAttributes;
    if (started && (started.attempt ?? 1) > 1 && started.lastFailure?.timeoutFailureInfo) of(started.scheduledEventId).timedOut = 1;
    const completed = e.activityTaskCompletedEventAttributes;
    const result = completed?.result?.payloads?.[0];
    if (result)
      of(completed.scheduledEventId).unseen =
        defaultPayloadConverter.fromPayload<{ progress?: RetryProgress } | null>(result)?.progress?.unseenRuns ?? 0;
  }
  // a timed-out run whose saves were lost is both: counted once
  return [...byActivity.values()].reduce((n, a) => n + Math.max(a.timedOut, a.unseen), 0);
}
