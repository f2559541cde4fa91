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

/** `count` events from `device` to `receiverUrl/in`, message ids `<device>-<i>`, retried with `policy`. */
export function eventsTo(receiverUrl: string, device: string, count: number, policy: DeliveryInput['policy']): DeliveryInput[] {
  return Array.from({ length: count }, (_, i) => ({
    kind: 'event',
    tenant: 'acme',
    device,
    messageId: `${device}-${i}`,
    target: `${receiverUrl}/in`,
    payload: { i },
    policy,
  }));
}
