export * from './types';
export { deliveryIdOf } from './ids';
export { visibilityQuery, DEAD_LETTER_STATES, type DeadLetterState, type DeliveryFilter } from './filter';
