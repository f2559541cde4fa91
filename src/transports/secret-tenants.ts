import type { SecretTenantsLookup } from '../validation/secret-tenants';
import { credentialsFromEnvironment, MQTT_CREDENTIAL } from './mqtt-credentials';
import { parseTenants } from './secret-binding';
import { SIGNING_SECRET, signingSecretsFromEnvironment } from './signing';

/**
 * The tenants of the secrets an environment configures, for a check at submit (the HTTP API server, the
 * CLI): read as the worker reads them, at each call. A secret this environment does not have, or has
 * broken, is undefined: the worker reports a broken one at its start, and decides at the attempt.
 */
export function secretTenantsFromEnvironment(env: NodeJS.ProcessEnv = process.env): SecretTenantsLookup {
  const signing = signingSecretsFromEnvironment(env);
  const credentials = credentialsFromEnvironment(env);
  return (use, name) => {
    try {
      const secret = use === 'signing' ? signing(name) : credentials(name);
      return secret && parseTenants(secret.tenants, use === 'signing' ? SIGNING_SECRET : MQTT_CREDENTIAL);
    } catch {
      return undefined;
    }
  };
}
