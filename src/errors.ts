import { ApplicationFailure } from '@temporalio/common';

/**
 * Makes `instanceof clazz` test a marker (`Symbol.for`) instead of the constructor's identity, as the Temporal
 * SDK's `SymbolBasedInstanceOfError` does: an application that ends up with two copies of this package (two
 * versions in node_modules, Jest's module registry, a bundle) still recognises an error from the other copy.
 * Each subclass is marked on its own: a subclass left unmarked inherits the check but falls back to the
 * prototype chain, so `instanceof` never accepts a sibling class.
 */
export function recognisedAcrossCopies(clazz: abstract new (...args: never[]) => Error, name: string): void {
  const marker = Symbol.for(`redeliver.${name}`);
  Object.defineProperty(clazz.prototype, marker, { value: true, enumerable: false });
  Object.defineProperty(clazz, Symbol.hasInstance, {
    value(this: { prototype: object }, value: unknown): boolean {
      if (typeof value !== 'object' || value === null) return false;
      if (this !== clazz) return Object.prototype.isPrototypeOf.call(this.prototype, value);
      return (value as Record<symbol, unknown>)[marker] === true;
    },
  });
}

/**
 * Every error redeliver raises on purpose extends RedeliverError, so a caller tells them from the SDK's and
 * the network's with one `instanceof`; each subclass says what kind of refusal it is.
 */
export abstract class RedeliverError extends Error {
  static {
    recognisedAcrossCopies(this, 'RedeliverError');
  }
}

/** One problem with a field of the input: `field` is a dotted path such as `policy.max`. */
export interface Problem {
  field: string;
  message: string;
}

/** Bad input, refused before anything starts; lists every problem found, each naming its field. */
export class InvalidInputError extends RedeliverError {
  static {
    recognisedAcrossCopies(this, 'InvalidInputError');
  }
  override readonly name: string = 'InvalidInputError';
  constructor(
    readonly problems: Problem[],
    what = 'input',
  ) {
    super(`invalid ${what}:\n${problems.map((p) => `  - ${p.field}: ${p.message}`).join('\n')}`);
  }

  /** @deprecated test `err instanceof ConflictError`. */
  get conflict(): boolean {
    return this instanceof ConflictError;
  }
}

/**
 * Input that is well-formed but clashes with what exists: an id given again for something else (a message id,
 * a batch id, a running subscription), an ordering key with no room left. The HTTP API answers 409 instead of
 * 400; the CLI exits as for any bad input.
 */
export class ConflictError extends InvalidInputError {
  static {
    recognisedAcrossCopies(this, 'ConflictError');
  }
  override readonly name: string = 'ConflictError';
}

/**
 * Why a workflow's update or signal handler refused what it was asked: a stable name to branch on,
 * `err instanceof DeliveryControlError && err.kind === 'AlreadyPaused'`; the message says it in words. A
 * workflow throws one with `refusal(kind, …)` and the client reads it back with `refusalKindOf`: the kind is
 * the failure's `type` on the wire, so a name here never changes (recorded histories and running workflows
 * carry it).
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
  /** a place on an ordering key: its queue is full (the client raises a ConflictError naming `orderingKey`). */
  KeyFull: 'KeyFull',
  /** stop of a command subscription: it is stopping already (the client waits for its result). */
  AlreadyStopping: 'AlreadyStopping',
  /** an endpoint's settings or mode: a field is wrong (the client raises an InvalidInputError). */
  InvalidSettings: 'InvalidSettings',
} as const;

export type RefusalKind = keyof typeof REFUSAL_KINDS;

/**
 * The kinds a DeliveryControlError carries, the HTTP API's problem `kind`: the others are answered otherwise
 * (a conflict, a bad input, the subscription's result).
 */
export const CONTROL_REFUSAL_KINDS = [
  'NotWaiting',
  'AlreadyPaused',
  'NotPaused',
  'Ended',
  'NotADeadLetter',
  'NoMessage',
  'DeadlinePassed',
  'NotBlocked',
  'Other',
] as const satisfies readonly RefusalKind[];

/** What a workflow handler (an update's validator, an update, a signal) throws to refuse: its `type` is the kind. */
export function refusal(kind: RefusalKind, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: REFUSAL_KINDS[kind], message });
}

/**
 * The kind of a handler's refusal, as the client gets it (a `WorkflowUpdateFailedError`'s cause): anything
 * else, or a kind this client does not know, is `Other`.
 */
export function refusalKindOf(failure: unknown): RefusalKind {
  const type = failure instanceof ApplicationFailure ? failure.type : undefined;
  return typeof type === 'string' && Object.hasOwn(REFUSAL_KINDS, type) ? (type as RefusalKind) : 'Other';
}

/** A control (retry now, pause, resume, cancel) or a redrive that the delivery refused: `kind` says why. */
export class DeliveryControlError extends RedeliverError {
  static {
    recognisedAcrossCopies(this, 'DeliveryControlError');
  }
  override readonly name = 'DeliveryControlError';
  constructor(
    readonly deliveryId: string,
    readonly kind: RefusalKind,
    readonly reason: string,
  ) {
    super(`${deliveryId}: ${reason}`);
  }
}
