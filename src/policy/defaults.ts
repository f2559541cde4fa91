import type { BackoffPolicy, MessageKind } from './types';

const HOUR = 60 * 60 * 1000;

/** The Bosch IoT Hub retry guide's recommended values, shared by every kind. */
const BASE: Omit<BackoffPolicy, 'maxAge' | 'maxAttempts'> = {
  jitter: 'full',
  initial: 200,
  multiplier: 2,
  min: 200,
  max: 300_000,
  deadline: null,
};

/** The default policy of a message kind (SPEC §2); `qos` matters for telemetry only (default 1). */
export function defaultPolicy(kind: MessageKind, qos: 0 | 1 = 1): BackoffPolicy {
  switch (kind) {
    case 'telemetry':
      return qos === 0 ? { ...BASE, maxAttempts: 1, maxAge: null } : { ...BASE, maxAttempts: 0, maxAge: HOUR };
    case 'event':
      return { ...BASE, maxAttempts: 0, maxAge: 7 * 24 * HOUR };
    case 'command-response':
      return { ...BASE, maxAttempts: 0, maxAge: 5 * 60 * 1000 };
  }
}
