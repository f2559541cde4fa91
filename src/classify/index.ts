export * from './types';
export { classify, FAILURE_TYPES, STABLE_CODE } from './classify';
export { parseRetryAfter, parseHttpDate, MAX_RETRY_AFTER_MS } from './retry-after';
export { CLASSIFICATION_TABLE, type ClassificationRow } from './table';
