import type { Redeliver } from '../../src/client/index';
import type { DeliveryStatus } from '../../src/delivery/types';
import { waitFor } from './wait';

/**
 * A delivery's status once its id is found: a message without a delivery of its own is found through what
 * visibility lists (its batch, its hold), a moment after it was started there.
 */
export function statusOnceFound(redeliver: Redeliver, deliveryId: string, timeoutMs: number, what: string): Promise<DeliveryStatus> {
  const status = () =>
    redeliver
      .getHandle(deliveryId)
      .status()
      .catch(() => null);
  return waitFor(status, (s) => s !== null, timeoutMs, what) as Promise<DeliveryStatus>;
}
