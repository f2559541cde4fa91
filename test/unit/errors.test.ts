import { ApplicationFailure } from '@temporalio/common';
import { problemOf } from '../../src/api/problems';
import type * as ConfigModule from '../../src/config/errors';
import { ConfigError } from '../../src/config/errors';
import {
  ConflictError,
  DeliveryControlError,
  InvalidInputError,
  REFUSAL_KINDS,
  RedeliverError,
  refusal,
  refusalKindOf,
  type RefusalKind,
} from '../../src/errors';
import type * as ErrorsModule from '../../src/errors';

// An application can hold two copies of redeliver (two versions in node_modules, a bundle, Jest's registry):
// an error raised by one copy must still be recognised by the other's classes.
let other: typeof ErrorsModule;
let otherConfig: typeof ConfigModule;
jest.isolateModules(() => {
  other = jest.requireActual<typeof ErrorsModule>('../../src/errors');
  otherConfig = jest.requireActual<typeof ConfigModule>('../../src/config/errors');
});

const problems = [{ field: 'messageId', message: 'was already submitted with a different message or target' }];

describe('instanceof across two copies of the package', () => {
  it('loads a second copy: its classes are other constructors', () => {
    expect(other.InvalidInputError).not.toBe(InvalidInputError);
  });

  it("recognises the other copy's errors as their class and every ancestor", () => {
    const conflict = new other.ConflictError(problems, 'delivery');
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toBeInstanceOf(InvalidInputError);
    expect(conflict).toBeInstanceOf(RedeliverError);
    expect(new other.DeliveryControlError('d', 'Ended', 'ended')).toBeInstanceOf(DeliveryControlError);
    expect(new otherConfig.ConfigError([{ variable: 'X', message: 'bad' }])).toBeInstanceOf(ConfigError);
    expect(new InvalidInputError(problems)).toBeInstanceOf(other.RedeliverError);
  });

  it('accepts neither a sibling class nor a parent for a subclass', () => {
    expect(new other.InvalidInputError(problems)).not.toBeInstanceOf(ConflictError);
    expect(new other.DeliveryControlError('d', 'Ended', 'ended')).not.toBeInstanceOf(InvalidInputError);
    expect(new other.ConflictError(problems)).not.toBeInstanceOf(DeliveryControlError);
    expect(new Error('plain')).not.toBeInstanceOf(RedeliverError);
    expect(null).not.toBeInstanceOf(RedeliverError);
  });

  it('an unmarked subclass falls back to the prototype chain: its parent is no instance of it', () => {
    class Unmarked extends InvalidInputError {}
    expect(new Unmarked(problems)).toBeInstanceOf(Unmarked);
    expect(new Unmarked(problems)).toBeInstanceOf(InvalidInputError);
    expect(new InvalidInputError(problems)).not.toBeInstanceOf(Unmarked);
  });
});

describe('refusals', () => {
  it("puts the kind on the wire as the failure's type, unchanged, and reads it back", () => {
    for (const kind of Object.keys(REFUSAL_KINDS) as RefusalKind[]) {
      const failure = refusal(kind, 'why');
      expect(failure).toMatchObject({ type: kind, message: 'why', nonRetryable: false });
      expect(refusalKindOf(failure)).toBe(kind);
    }
  });

  it('keeps the types recorded histories and running workflows carry', () => {
    expect(Object.keys(REFUSAL_KINDS).sort()).toEqual(
      [
        'AlreadyPaused',
        'AlreadyStopping',
        'DeadlinePassed',
        'Ended',
        'InvalidSettings',
        'KeyFull',
        'NoMessage',
        'NotADeadLetter',
        'NotBlocked',
        'NotPaused',
        'NotWaiting',
        'Other',
      ].sort(),
    );
  });

  it('reads a refusal thrown by the other copy', () => {
    expect(refusalKindOf(other.refusal('KeyFull', 'full'))).toBe('KeyFull');
  });

  it('reads an unknown type, another failure or nothing as Other', () => {
    expect(refusalKindOf(ApplicationFailure.create({ type: 'FromANewerWorker', message: 'x' }))).toBe('Other');
    expect(refusalKindOf(ApplicationFailure.create({ message: 'no type' }))).toBe('Other');
    expect(refusalKindOf(ApplicationFailure.create({ type: 'toString', message: 'x' }))).toBe('Other');
    expect(refusalKindOf(new Error('NotWaiting'))).toBe('Other');
    expect(refusalKindOf(undefined)).toBe('Other');
  });
});

describe('the HTTP answer for an input error', () => {
  it('is 409 for a conflict, from either copy, and 400 for other bad input', () => {
    expect(problemOf(new ConflictError(problems, 'delivery')).status).toBe(409);
    expect(problemOf(new other.ConflictError(problems, 'delivery')).status).toBe(409);
    expect(problemOf(new InvalidInputError(problems, 'delivery')).status).toBe(400);
    expect(problemOf(new other.InvalidInputError(problems, 'delivery')).status).toBe(400);
  });

  it('keeps the problems list in both', () => {
    expect(problemOf(new ConflictError(problems)).body()).toMatchObject({ status: 409, problems });
  });
});
