import type { Problem } from '../errors';

/** Which kind of the worker's secrets a field names: a signing secret (`target.signing`) or an MQTT credential (`target.credential`, `broker.credential`). */
export type SecretUse = 'signing' | 'credential';

/**
 * The tenants that may use one of the worker's secrets, as far as the submitting side can see its
 * configuration (the HTTP API server and the CLI, given the worker's environment): tenant ids, `'*'` for
 * all, or undefined when it cannot tell (no such secret here, or a broken one). Undefined leaves the
 * decision to the worker, which checks again before any socket whatever submit said.
 */
export type SecretTenantsLookup = (use: SecretUse, name: string) => readonly string[] | '*' | undefined;

const LABELS: Record<SecretUse, string> = { signing: 'signing secret', credential: 'MQTT credential' };

/**
 * The problem, naming `field`, when a delivery or subscription of `tenant` names a secret that is not for
 * that tenant. It does not say which tenants the secret is for: another tenant's names are not the producer's.
 */
export function secretTenantProblems(
  lookup: SecretTenantsLookup | undefined,
  use: SecretUse,
  name: string | null | undefined,
  tenant: string,
  field: string,
): Problem[] {
  const tenants = name ? lookup?.(use, name) : undefined;
  if (tenants === undefined || tenants === '*' || tenants.includes(tenant)) return [];
  const message = `names the ${LABELS[use]} "${name}", which is not for tenant "${tenant}": a secret of the worker serves only the tenants in its "tenants" (docs/mqtt.md, "Secrets are bound to tenants")`;
  return [{ field, message }];
}
