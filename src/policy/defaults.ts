import type { BackoffPolicy, MessageKind } from './types';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The Bosch IoT Hub retry guide's recommended values (initial 200 ms, minimum 200 ms, maximum 300 s), shared by every kind. */
const GUIDE: Omit<BackoffPolicy, 'maxAge' | 'maxAttempts'> = {
  jitter: 'full',
  initial: 200,
  multiplier: 2,
  min: 200,
  max: 300_000,
  deadline: null,
};

/**
 * The default policy of a message kind (docs/spec.md §2); `qos` matters for telemetry only (default 1).
 * Telemetry QoS 0 is sent once; QoS 1 expires after 1 h, events after 7 days, command responses
 * after 5 min (replaced by the command's deadline when the delivery gives one).
 */
export function defaultPolicy(kind: MessageKind, qos: 0 | 1 = 1): BackoffPolicy {
  switch (kind) {
    case 'telemetry':
      return qos === 0 ? { ...GUIDE, maxAttempts: 1, maxAge: null } : { ...GUIDE, maxAttempts: 0, maxAge: HOUR };
    case 'event':
      return { ...GUIDE, maxAttempts: 0, maxAge: 7 * 24 * HOUR };
    case 'command-response':
      return { ...GUIDE, maxAttempts: 0, maxAge: 5 * MINUTE };
  }
}
