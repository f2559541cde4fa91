export { STRATEGIES, backoffOf, type Strategy, type Backoff } from './strategies';
export { runContention, type ContentionOptions, type ContentionResult } from './contention';
export { runExperiment, type ExperimentOptions, type StrategyResult } from './experiment';
