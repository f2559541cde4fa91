// What a team would write without redeliver: the baselines the benchmarks compare against.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { BaselineActivities } from './activities';

const once = proxyActivities<BaselineActivities>({ startToCloseTimeout: '15s', retry: { maximumAttempts: 1 } });

/** The simplest workflow: one activity that does the POST. */
export async function bareDelivery(url: string, body: string, messageId: string): Promise<void> {
  await once.post(url, body, messageId);
}

/** Temporal's native activity retry: exponential backoff on the server, no jitter, no per-attempt visibility. */
export async function nativeRetryDelivery(url: string, body: string, messageId: string, waitMs: number): Promise<void> {
  const retrying = proxyActivities<BaselineActivities>({
    startToCloseTimeout: '15s',
    retry: { initialInterval: waitMs, backoffCoefficient: 1 },
  });
  await retrying.post(url, body, messageId);
}

/** A plain workflow loop: the activity, then a fixed sleep, until it succeeds. */
export async function loopDelivery(url: string, body: string, messageId: string, waitMs: number): Promise<void> {
  for (;;) {
    try {
      await once.post(url, body, messageId);
      return;
    } catch {
      await sleep(waitMs);
    }
  }
}
