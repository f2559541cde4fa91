import { patched } from '@temporalio/workflow';
import type { DeliveryResult } from '../delivery/types';
import type { DeliveryTracker } from './delivery-state';
import { attemptInTurn, continueIfLong } from './delivery-turn';
import { SERVER_SIDE_RETRIES } from './patches';

/**
 * The retries of a delivery recorded before `patched('server-side-retries')`: a durable timer and an attempt
 * activity per retry, as long as its history says so (CONTRIBUTING.md). Asked after each failed attempt: the
 * delivery's outcome, or null once a failure finds the patch and the retries go to the server.
 */
export async function retryOnTimers(d: DeliveryTracker, historyLimit: number): Promise<DeliveryResult | null> {
  while (!patched(SERVER_SIDE_RETRIES)) {
    await continueIfLong(d, historyLimit);
    const result = await attemptInTurn(d);
    if (result) return result;
  }
  return null;
}
