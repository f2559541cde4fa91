/**
 * A worker's environment that sends operational events to `<receiverUrl>/ops`, signed with `secret` under the
 * name `ops`: a secret bound to the receiver and for the tenant `redeliver`, whose deliveries the events are.
 */
export function operatorEventsEnv(receiverUrl: string, secret: string): Record<string, string> {
  return {
    REDELIVER_OPERATOR_URLS: `${receiverUrl}/ops`,
    REDELIVER_OPERATOR_SIGNING_SECRET: 'ops',
    REDELIVER_SIGNING_SECRETS_OPS: JSON.stringify({ secrets: [secret], endpoints: [receiverUrl], tenants: ['redeliver'] }),
  };
}
