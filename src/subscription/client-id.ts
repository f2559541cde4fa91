/*
 * A command subscription's MQTT client id names its session on the broker: whoever connects with it takes
 * the session over, with its subscriptions and the commands queued for it. So no tenant may name another
 * tenant's: a caller's own id is scoped to its tenant, and the id redeliver makes up cannot be worked out.
 */

/** The longest client id a caller may give (a tenant of 128 characters, the slash, and 127 more). */
export const MAX_CLIENT_ID_LENGTH = 256;

/**
 * What a caller-chosen `broker.clientId` must start with: the tenant and a slash. A tenant id never holds
 * a slash, so no tenant's prefix is the start of another's (`acme/` is not the start of `acme-x/…`), and
 * an id redeliver makes up (`rdsub…`) has none.
 */
export function clientIdPrefixOf(tenant: string): string {
  return `${tenant}/`;
}

/** Why `clientId` may not be the client id of a subscription of `tenant`; undefined when it may. */
export function clientIdScopeProblem(clientId: string, tenant: string): string | undefined {
  const prefix = clientIdPrefixOf(tenant);
  if (clientId.startsWith(prefix) && clientId.length > prefix.length) return undefined;
  return (
    `must start with ${JSON.stringify(prefix)} (the tenant and a slash), then a name of your own, ` +
    `e.g. ${JSON.stringify(`${prefix}commands-1`)}: the client id names the broker session, and one that ` +
    `another tenant may give would let its subscription take this one's commands over`
  );
}

/**
 * Whether a subscription's client id was made up by redeliver (`rdsub` and hex digits: random since issue 31,
 * before that a hash of the subscription id) rather than given by the caller (which has a slash).
 */
export function isDerivedClientId(clientId: string): boolean {
  return /^rdsub[0-9a-f]+$/.test(clientId);
}
