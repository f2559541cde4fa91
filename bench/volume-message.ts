import type { DeliveryInput } from '../src/delivery/types';

/**
 * Message `i` of a volume run: telemetry from one of 100 devices, to the sink's `pathname`, delivered at once. A
 * run whose messages may become deliveries of their own gives a tenant of its own: a delivery's id is its tenant,
 * device and message id, and one that exists already stands for the message (docs/batches.md).
 */
export function benchMessage(sinkUrl: string, pathname: string, i: number, tenant = 'bench'): DeliveryInput {
  return {
    kind: 'telemetry',
    tenant,
    device: `d${i % 100}`,
    messageId: `m${i}`,
    payload: { id: i, temperature: 21.5 },
    target: `${sinkUrl}${pathname}`,
  };
}
