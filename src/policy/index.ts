export * from './types';
export { defaultPolicy } from './defaults';
export { nextDelay } from './backoff';
export { validatePolicy, policyProblems, type PolicyContext } from './validate';
