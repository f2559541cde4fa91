export { ConfigError, EnvReader, type ConfigProblem, type Environment } from './errors';
export { ENVIRONMENT, isKnownVariable, type EnvironmentVariable } from './environment';
export { readTemporalConnection, temporalConnectionFromEnv, DEFAULT_ADDRESS, DEFAULT_NAMESPACE, type TemporalConnectionConfig } from './temporal';
export { clientSettingsFromEnv, workerSettingsFromEnv, DEFAULT_TASK_QUEUE, type ClientSettings, type WorkerSettings } from './settings';
