import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { submissionCheck, SUBMISSION_UNCHECKED } from '../../src/worker-services/submission-check';
import { createRetryActivities } from '../../src/activities/retry';
import type { RetryEnd } from '../../src/contract';
import { retryProgress } from '../support/retry-progress';
import type { AttemptResult } from '../../src/activities/deliver';
import { validateDelivery } from '../../src/validation/delivery';
import { AesGcmPayloadCodec } from '../../src/encryption/codec';
import { parseKeyRing } from '../../src/encryption/keys';

// issue 15: a worker with keys must not send a delivery it could not check was submitted encrypted
const keys = parseKeyRing(`k1:${randomBytes(32).toString('base64')}`);
const unreachable = {
  options: { loadedDataConverter: { payloadCodecs: [new AesGcmPayloadCodec(keys)] } },
  workflowService: { getWorkflowExecutionHistory: () => Promise.reject(new Error('14 UNAVAILABLE: no connection')) },
} as unknown as Client;
const mock = () =>
  new MockActivityEnvironment(undefined, { logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never });

test('a check that cannot read the history fails closed: a retryable failure that sent nothing', async () => {
  const check = submissionCheck(unreachable)!;
  const refused = await mock().run(check);
  expect(refused).toMatchObject({ class: 'server', retryable: true, code: SUBMISSION_UNCHECKED });
  expect((refused as { reason: string }).reason).toMatch(/nothing was sent/);
});

describe('the retrying activity checks again before sending after an unchecked first attempt', () => {
  const delivery = validateDelivery({ kind: 'event', tenant: 'acme', device: 'd', target: 'https://example.com/x', payload: { n: 1 } });
  const progress = (code: string) => retryProgress({ code });
  const run = async (code: string, checked: Awaited<ReturnType<NonNullable<ReturnType<typeof submissionCheck>>>>) => {
    const sent: number[] = [];
    const attempt = (_d: unknown, n: number): Promise<AttemptResult> => {
      sent.push(n);
      return Promise.resolve({ ok: true, code: 'http-202', reason: 'HTTP 202', durationMs: 1 } as AttemptResult);
    };
    const checks: number[] = [];
    const { retryDelivery } = createRetryActivities({
      attempt,
      checkSubmission: () => {
        checks.push(1);
        return Promise.resolve(checked);
      },
    });
    const end = (await mock().run(retryDelivery, {
      delivery,
      progress: progress(code),
      agedFrom: Date.now() - 1_000,
      searchedClass: 'server' as const,
    })) as RetryEnd;
    return { end, sent, checks: checks.length };
  };

  test('refused now: rejected, nothing sent', async () => {
    const refusal = { class: 'client' as const, retryable: false, code: 'unencrypted-submission', reason: 'plain', durationMs: 0 };
    const { end, sent } = await run(SUBMISSION_UNCHECKED, refusal);
    expect(end).toMatchObject({ end: 'rejected', progress: { lastError: { code: 'unencrypted-submission' } } });
    expect(sent).toEqual([]);
  });

  test('checked and encrypted now: the attempt goes out', async () => {
    const { end, sent } = await run(SUBMISSION_UNCHECKED, null);
    expect(end.end).toBe('delivered');
    expect(sent).toEqual([2]);
  });

  test('after any other failure: no check, the attempt goes out', async () => {
    const { end, sent, checks } = await run('http-503', null);
    expect(end.end).toBe('delivered');
    expect({ sent, checks }).toEqual({ sent: [2], checks: 0 });
  });
});
