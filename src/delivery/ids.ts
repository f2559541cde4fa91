/** A delivery's workflow id: readable in the UI, and the idempotency key (same message id → same delivery). */
export function deliveryIdOf(tenant: string, device: string, messageId: string): string {
  return `delivery/${tenant}/${device}/${messageId}`;
}

/** `delivery/<tenant>/<device>/<messageId>`: what the id alone says (it is never encrypted). */
export function idParts(deliveryId: string): { tenant: string; device: string; messageId: string } {
  const [, tenant = '', device = '', ...rest] = deliveryId.split('/');
  return { tenant, device, messageId: rest.join('/') };
}

/**
 * The tenant of what the operator's own configuration sends or reads, not a producer's: operational events
 * (docs/endpoint-health.md, "Operational events") and the bridge's broker login. A secret they use names it in "tenants".
 */
export const OPERATOR_TENANT = 'redeliver';

/** The task queue workers poll and deliveries run on, unless configured otherwise. */
export const DEFAULT_TASK_QUEUE = 'redeliver';
