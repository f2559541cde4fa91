export * from './types';
export { defaultPolicy } from './defaults';
export { nextDelay, backoffDelay, backoffWindow, HINT_SPREAD, HINT_SPREAD_CAP_MS } from './backoff';
export { validatePolicy, policyProblems, resolvePolicy, POLICY_FIELDS, type PolicyContext } from './validate';
export { parseDuration, formatDuration } from './duration';
export {
  attemptTimeline,
  previewSchedule,
  type Timeline,
  type TimelineOptions,
  type AttemptSpread,
  type SchedulePreview,
} from './schedule';
export { seededRandom } from './random';
export { describePolicy } from './describe';
