import type { DeliveryInput } from '../src/delivery/types';

/** Message `i` of a volume run: telemetry from one of 100 devices, to the sink's `pathname`, delivered at once. */
export function benchMessage(sinkUrl: string, pathname: string, i: number): DeliveryInput {
  return {
    kind: 'telemetry',
    tenant: 'bench',
    device: `d${i % 100}`,
    messageId: `m${i}`,
    payload: { id: i, temperature: 21.5 },
    target: `${sinkUrl}${pathname}`,
  };
}
