export { ConfigError, EnvReader, type ConfigProblem, type Environment } from './errors';
export { ENVIRONMENT, isKnownVariable, type EnvironmentVariable } from './environment';
export {
  readTemporalConnection,
  temporalConnectionFromEnv,
  DEFAULT_ADDRESS,
  DEFAULT_NAMESPACE,
  type TemporalConnectionConfig,
} from './temporal';
export { codecServerSettingsFromEnv, type CodecServerSettings } from './codec-server';
export { bridgeSettingsFromEnv } from './bridge';
export {
  clientDefaultsFromEnv,
  clientSettingsFromEnv,
  runtimeSettingsFromEnv,
  workerSettingsFromEnv,
  DEFAULT_TASK_QUEUE,
  type ClientDefaults,
  type ClientSettings,
  type RuntimeSettings,
  type WorkerSettings,
} from './settings';
