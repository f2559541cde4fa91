import { credentialProblems } from '../transports/mqtt-credentials';
import { EnvReader, type Environment } from './errors';
import { readClientSettings, type ClientSettings } from './settings';

/**
 * What `redeliver bridge` takes from the environment: a client's settings (Temporal, task queue, keys), and
 * the MQTT credentials, of which its broker's is one. Every configured credential is checked now, as a worker
 * checks them, so a broken one stops the bridge at start naming its variable; the bridge reads its own again
 * at every connect, so that a rotated password needs no restart.
 */
export function bridgeSettingsFromEnv(env: Environment = process.env): ClientSettings {
  const reader = new EnvReader(env);
  const client = readClientSettings(reader);
  for (const p of credentialProblems(reader.env)) reader.problem(p.variable, p.message);
  reader.done();
  return client;
}
