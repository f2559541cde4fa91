import { MockActivityEnvironment } from '@temporalio/testing';
import { createRetryActivities } from '../../src/activities/retry';
import type { AttemptResult } from '../../src/activities/deliver';
import type { RetryEnd, RetryInput, RetryProgress } from '../../src/contract';
import { validateDelivery } from '../../src/validation/delivery';
import { retryProgress } from '../support/retry-progress';

// a run of the retrying activity whose saves never reached the server (it overran its time on a stalled worker) is
// followed by a run that starts from an older save: the count of such runs is what explains a resent attempt number
const delivery = validateDelivery({ kind: 'event', tenant: 'acme', device: 'd', target: 'https://example.com/x', payload: { n: 1 } });
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never;
const progress = (over: Partial<RetryProgress> = {}) =>
  retryProgress({ attempts: 3, lastClass: 'connection', code: 'net-ECONNRESET' }, over);
const input = (p: RetryProgress): RetryInput => ({ delivery, progress: p, agedFrom: Date.now() - 1_000, searchedClass: 'connection' });

/** One run of the activity as Temporal's attempt `run`, given the heartbeat the server kept; what it sent, saved and ended in. */
async function runOnce(
  run: number,
  heartbeat: RetryProgress | undefined,
  answer: AttemptResult,
  given = progress(),
  scheduledAt = Date.now(),
) {
  const sent: number[] = [];
  const saved: RetryProgress[] = [];
  const env = new MockActivityEnvironment(
    { attempt: run, heartbeatDetails: heartbeat, scheduledTimestampMs: scheduledAt },
    { logger: quiet },
  );
  env.on('heartbeat', (d: RetryProgress) => saved.push(d));
  const { retryDelivery } = createRetryActivities({
    attempt: (_d, n) => {
      sent.push(n);
      return Promise.resolve(answer);
    },
  });
  const ended: unknown = await env.run(retryDelivery, input(given)).catch((failure: unknown) => failure);
  return { sent, saved, ended };
}

const reset: AttemptResult = { ok: false, class: 'connection', retryable: true, code: 'net-ECONNRESET', reason: 'reset', durationMs: 1 };
const accepted = { ok: true, code: 'http-202', reason: 'HTTP 202', durationMs: 1 } as AttemptResult;

test('every save of a run is marked with its run number, and so is the progress it ends with', async () => {
  const { saved, sent, ended } = await runOnce(1, undefined, reset);
  expect(sent).toEqual([4]);
  expect(saved.map((s) => s.run)).toEqual([1, 1]);
  // its first save is the attempt in flight, before it goes out
  expect(saved[0]!.inFlight).toMatchObject({ attempt: 4 });
  const { ended: delivered } = await runOnce(3, progress({ run: 2 }), accepted);
  expect((delivered as RetryEnd).progress.run).toBe(3);
  expect(ended).toBeInstanceOf(Error);
});

test('a first run given a planned time ahead only waits, saving nothing: the run after it counts none unseen', async () => {
  const ahead = Date.now() + 60_000;
  const early = await runOnce(1, undefined, reset, progress({ nextAttemptAt: ahead }), Date.now());
  expect(early.sent).toEqual([]);
  expect(early.saved).toEqual([]);
  const next = await runOnce(2, undefined, accepted, progress({ nextAttemptAt: ahead }), ahead - 60_000);
  expect(next.sent).toEqual([4]);
  expect((next.ended as RetryEnd).progress.unseenRuns).toBeUndefined();
  // one that did not wait and left no save: the run after it counts it
  const lost = await runOnce(2, undefined, accepted, progress(), Date.now());
  expect((lost.ended as RetryEnd).progress.unseenRuns).toBe(1);
});

test('a run that follows its predecessor’s save counts none unseen', async () => {
  const { ended, sent } = await runOnce(2, progress({ run: 1 }), accepted);
  expect(sent).toEqual([4]);
  expect((ended as RetryEnd).progress.unseenRuns).toBeUndefined();
});

test('a run that finds an older save, or none after the first run, counts the runs between as unseen', async () => {
  // run 2's saves were lost: run 3 starts from run 1's and sends attempt 4 again, and says so
  const older = await runOnce(3, progress({ run: 1 }), accepted);
  expect(older.sent).toEqual([4]);
  expect((older.ended as RetryEnd).progress.unseenRuns).toBe(1);
  // the first run's saves were lost: the second starts from the workflow's progress
  const none = await runOnce(2, undefined, accepted);
  expect((none.ended as RetryEnd).progress.unseenRuns).toBe(1);
  // counts add up over the activity's runs; a save from before runs were marked counts as the last run's
  const added = await runOnce(5, progress({ run: 2, unseenRuns: 1 }), accepted);
  expect((added.ended as RetryEnd).progress.unseenRuns).toBe(3);
  const unmarked = await runOnce(4, progress(), accepted);
  expect((unmarked.ended as RetryEnd).progress.unseenRuns).toBeUndefined();
});
