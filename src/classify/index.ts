export * from './types';
export { classify, FAILURE_TYPES } from './classify';
export { parseRetryAfter } from './retry-after';
