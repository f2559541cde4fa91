export { STRATEGIES, backoffOf, type Strategy, type Backoff } from './strategies';
export { runContention, type ContentionOptions, type ContentionResult } from './contention';
export { runExperiment, type ExperimentOptions, type StrategyResult } from './experiment';
export { replayOutage, recordedFigures, failureSpans, type ReplayOptions, type OutageReplay } from './outage';
export { outageFigures, type OutageFigures, type PeriodFigures, type Span } from './outage-figures';
