/**
 * `redeliver`: the producer's API. Submit, read and steer deliveries (Redeliver), command subscriptions
 * (Subscriptions), the errors they raise, and encryption for a Client of the application's own. The worker
 * is `redeliver/worker`; backoff policies `redeliver/policy`; error classification `redeliver/classify`.
 */
export {
  Redeliver,
  DeliveryHandle,
  DEFAULT_TASK_QUEUE,
  type ConnectOptions,
  type DeliverySummary,
  type EndpointView,
  type RedeliverOptions,
  type RedriveReport,
} from './client/index';
export { Batcher, type BatcherOptions, type BatchReceipt } from './batching/batcher';
export { BatchHandle, BatchSubmission, MAX_BATCH_BYTES, MAX_BATCH_MESSAGES, type MessageOutcome } from './batching/batches';
export type { BatchResult, MessageDisposition, MessageResult, OrderingStatus, Place } from './contract';
export { Subscriptions, SubscriptionHandle, type SubscriptionsOptions, type SubscriptionSummary } from './client/subscriptions';
export { OrderingKeys } from './starter/ordering-keys';
export {
  RedeliverError,
  InvalidInputError,
  ConflictError,
  DeliveryControlError,
  REFUSAL_KINDS,
  type Problem,
  type RefusalKind,
} from './errors';
export { ConfigError, type ConfigProblem, type Environment } from './config/errors';
export {
  AesGcmPayloadCodec,
  encryptingDataConverter,
  keylessDataConverter,
  isEncryptedValue,
  type EncryptedValue,
  parseKeyRing,
  startCodecServer,
  type KeyRing,
  type CodecServer,
  type CodecServerOptions,
} from './encryption';

export type {
  AttemptError,
  AttemptRecord,
  Delivery,
  DeliveryInput,
  DeliveryResult,
  DeliveryStateName,
  DeliveryStatus,
  HttpBatching,
  HttpBatchingInput,
  HttpTarget,
  HttpTargetInput,
  MessageKind,
  MqttTarget,
  MqttTargetInput,
  MqttVersion,
  OrderingPlace,
  Outcome,
  Target,
} from './delivery/types';
export { deliveryIdOf } from './delivery/ids';
export { DEAD_LETTER_STATES, type DeadLetterState, type DeliveryFilter } from './delivery/filter';
export type { ValidateOptions } from './validation/delivery';
export type { SecretTenantsLookup, SecretUse } from './validation/secret-tenants';
export type { BackoffPolicy, BackoffPolicyInput, Jitter } from './policy/types';
export type { ClassOverrides, ErrorClass, Verdict } from './classify/types';
export type { EndpointDowntimeReport, EndpointStatus, TimelineBucket } from './endpoints/types';
export { EndpointHandle } from './client/endpoint-handle';
export type { Bound, EndpointControl, EndpointSettings, EndpointSettingsInput } from './endpoints/controls';
export type {
  CommandCounts,
  CommandOutcome,
  CommandRecord,
  DowntimePeriod,
  DowntimeReport,
  SubscriptionInput,
  SubscriptionOutcome,
  SubscriptionResult,
  SubscriptionState,
  SubscriptionStatus,
} from './subscription/types';
