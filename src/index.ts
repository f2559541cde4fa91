/** The public library API of redeliver. */
export { Redeliver, DeliveryHandle, DeliveryControlError, DEFAULT_TASK_QUEUE, type ConnectOptions, type RedeliverOptions } from './client';
export { createWorker, type RedeliverWorkerOptions } from './worker';
export { createActivities, type Activities } from './activities';
export { InvalidInputError, type Problem } from './errors';
export * from './delivery';
export * from './policy';
export * from './classify';
export { SEARCH_ATTRIBUTES, statusQuery, retryNowUpdate, pauseUpdate, resumeUpdate } from './workflows/definitions';
