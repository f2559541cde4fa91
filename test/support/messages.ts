import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../src/delivery/types';

/** An event from `device` to `baseUrl + path` (the flaky endpoint's query scripts its faults), retried every 200 ms. */
export function eventTo(baseUrl: string, device: string, path: string, extra: Partial<DeliveryInput> = {}): DeliveryInput {
  return {
    kind: 'event',
    tenant: 'acme',
    device,
    messageId: randomUUID(),
    payload: { path },
    target: `${baseUrl}${path}`,
    policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
    ...extra,
  };
}
