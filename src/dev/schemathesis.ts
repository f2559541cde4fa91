import path from 'node:path';
import { ensurePipTool } from './pip-tool';

/** The schemathesis release the API's property tests run (PyPI). */
export const SCHEMATHESIS_VERSION = '4.32.5';

/**
 * The `schemathesis` command, installed on first use into a virtual environment of the project
 * (`.temporal/schemathesis/<version>/`, git-ignored), from PyPI as the Temporal CLI is. `$REDELIVER_SCHEMATHESIS`
 * names one you already have.
 */
export async function ensureSchemathesis(log: (line: string) => void = () => undefined): Promise<string> {
  // a developer's tool path, as REDELIVER_TEMPORAL_CLI: not a setting of the product
  const fromEnv = process.env.REDELIVER_SCHEMATHESIS;
  if (fromEnv) return fromEnv;
  const venv = await ensurePipTool({ name: 'schemathesis', version: SCHEMATHESIS_VERSION }, log);
  return path.join(venv, 'bin', 'schemathesis');
}

/** The OpenAPI client generator the generated-client test runs (PyPI): openapi-python-client. */
export const OPENAPI_PYTHON_CLIENT_VERSION = '0.29.1';

/**
 * openapi-python-client's environment, installed on first use (`.temporal/openapi-python-client/<version>/`): its
 * `bin/openapi-python-client` generates a client from the API's document, and its python runs that client (it has
 * httpx and attrs, all a generated client needs).
 */
export function ensureOpenApiPythonClient(log: (line: string) => void = () => undefined): Promise<string> {
  return ensurePipTool({ name: 'openapi-python-client', version: OPENAPI_PYTHON_CLIENT_VERSION }, log);
}
