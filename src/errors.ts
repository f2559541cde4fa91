/**
 * Every error redeliver raises on purpose extends RedeliverError, so a caller tells them from the SDK's and
 * the network's with one `instanceof`; each subclass says what kind of refusal it is.
 */
export abstract class RedeliverError extends Error {}

/** One problem with a field of the input: `field` is a dotted path such as `policy.max`. */
export interface Problem {
  field: string;
  message: string;
}

/** Bad input, refused before anything starts; lists every problem found, each naming its field. */
export class InvalidInputError extends RedeliverError {
  override readonly name = 'InvalidInputError';
  constructor(
    readonly problems: Problem[],
    what = 'input',
    /**
     * The input is well-formed but clashes with what exists: an id given again for something else (a message id,
     * a batch id, a running subscription). The HTTP API answers 409 instead of 400.
     */
    readonly conflict = false,
  ) {
    super(`invalid ${what}:\n${problems.map((p) => `  - ${p.field}: ${p.message}`).join('\n')}`);
  }
}

/**
 * Why a delivery refused a control (retry now, pause, resume, cancel) or a redrive: a stable name to branch
 * on, `err instanceof DeliveryControlError && err.kind === 'AlreadyPaused'`; the message says it in words.
 * The first three are the `type` of the delivery workflow's update validators' failures.
 */
export const REFUSAL_KINDS = {
  /** retry now: the delivery is not waiting for its next attempt (pending, attempting, or paused). */
  NotWaiting: 'NotWaiting',
  /** pause: it is paused already. */
  AlreadyPaused: 'AlreadyPaused',
  /** resume: it is not paused. */
  NotPaused: 'NotPaused',
  /** any control: the delivery has ended (delivered, a dead letter, cancelled). */
  Ended: 'Ended',
  /** redrive: the delivery is not a dead letter (delivered or cancelled). */
  NotADeadLetter: 'NotADeadLetter',
  /** redrive: the dead letter keeps no message to send again. */
  NoMessage: 'NoMessage',
  /** redrive: the message's deadline has passed. */
  DeadlinePassed: 'DeadlinePassed',
  /** release of an ordering key: nothing stops it (its head is being delivered, or it is idle). */
  NotBlocked: 'NotBlocked',
  /** a refusal this client does not know, from a newer worker: the message says why. */
  Other: 'Other',
} as const;

export type RefusalKind = keyof typeof REFUSAL_KINDS;

/** The kind of a validator failure's `type`; one this client does not know is `Other`. */
export function refusalKindOf(type: string | undefined): RefusalKind {
  return type !== undefined && Object.hasOwn(REFUSAL_KINDS, type) ? (type as RefusalKind) : 'Other';
}

/** A control (retry now, pause, resume, cancel) or a redrive that the delivery refused: `kind` says why. */
export class DeliveryControlError extends RedeliverError {
  override readonly name = 'DeliveryControlError';
  constructor(
    readonly deliveryId: string,
    readonly kind: RefusalKind,
    readonly reason: string,
  ) {
    super(`${deliveryId}: ${reason}`);
  }
}
