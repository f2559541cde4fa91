export * from './types';
export { validateDelivery, DEFAULT_MAX_PAYLOAD_BYTES, defaultMaxDeliveryBytes, DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_MQTT_TOPICS, CREDENTIAL_NAME, type ValidateOptions } from './validate';
export { deliveryIdOf } from './ids';
export { visibilityQuery, DEAD_LETTER_STATES, type DeadLetterState, type DeliveryFilter } from './filter';
