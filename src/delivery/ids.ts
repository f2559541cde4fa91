/** A delivery's workflow id: readable in the UI, and the idempotency key (same message id → same delivery). */
export function deliveryIdOf(tenant: string, device: string, messageId: string): string {
  return `delivery/${tenant}/${device}/${messageId}`;
}

/** An endpoint's workflow id (workflows/endpoint.ts): one per endpoint (host[:port]), next to the deliveries in the UI. */
export function endpointWorkflowId(endpoint: string): string {
  return `endpoint/${endpoint}`;
}
