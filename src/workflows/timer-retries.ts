import { patched } from '@temporalio/workflow';
import type { DeliveryResult } from '../delivery/types';
import type { DeliveryTracker } from './delivery-state';
import { attemptInTurn, continueIfLong } from './delivery-turn';

/**
 * Retries run as Temporal's own activity retries (server-retries.ts): no history event per retry.
 * Deliveries recorded before kept a timer and an activity per retry: their recorded part replays that way,
 * and at their next failed attempt they switch to server-side retries, carrying their state.
 */
export const SERVER_SIDE_RETRIES = 'server-side-retries';

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
