/** A delivery's workflow id: readable in the UI, and the idempotency key (same message id → same delivery). */
export function deliveryIdOf(tenant: string, device: string, messageId: string): string {
  return `delivery/${tenant}/${device}/${messageId}`;
}
