import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createBatchActivities, type BatchDeps } from '../../src/activities/batch';
import type { AttemptResult } from '../../src/activities/deliver';
import { SUBMISSION_UNCHECKED } from '../../src/worker-services/submission-check';
import { validateDelivery } from '../../src/validation/delivery';

// A batch's activity with its sends and starts recorded, not made: what it does when the submission check fails

const mock = () =>
  new MockActivityEnvironment(undefined, { logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never });
const deliveries = [1, 2, 3].map((n) =>
  validateDelivery({ kind: 'event', tenant: 'acme', device: 'd', messageId: `m-${n}`, target: 'https://example.com/x', payload: { n } }),
);

test('a worker with keys that cannot check how a batch was submitted sends nothing and starts nothing: the activity fails, to be retried', async () => {
  const sent: string[] = [];
  const started: string[] = [];
  const client = {
    workflow: {
      start: (_type: string, options: { workflowId: string }) => {
        started.push(options.workflowId);
        return Promise.resolve();
      },
    },
  } as unknown as Client;
  const deps: BatchDeps = {
    attempt: (delivery) => {
      sent.push(delivery.messageId);
      return Promise.resolve({ ok: true, code: 'http-202', reason: 'HTTP 202', durationMs: 1 } as AttemptResult);
    },
    attemptRequest: (() => Promise.reject(new Error('no batched endpoint here'))) as unknown as BatchDeps['attemptRequest'],
    client,
    // the history could not be read (activities/submission-check.ts): the batch may have come in plain text
    checkSubmission: () =>
      Promise.resolve({
        class: 'server',
        retryable: true,
        code: SUBMISSION_UNCHECKED,
        reason: 'could not read; nothing was sent',
        durationMs: 0,
      }),
  };
  const { firstAttempts } = createBatchActivities(deps);
  const run = mock().run(firstAttempts, { batchId: 'b-1', tenant: 'acme', deliveries });
  await expect(run).rejects.toThrow(/could not read; nothing was sent/);
  // handing the messages over would start deliveries by the worker's own (encrypting) client: their check
  // would then pass, and a batch submitted in plain text would go out
  expect({ sent, started }).toEqual({ sent: [], started: [] });
});
