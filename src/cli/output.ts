import { CommanderError } from 'commander';
import { DeliveryControlError } from '../client';
import { ConfigError } from '../config/errors';
import { InvalidInputError } from '../errors';

/** Exit codes scripts can rely on (README, "Exit codes"). */
export const EXIT = {
  ok: 0,
  /** the delivery ended in a dead letter or was cancelled (result) */
  notDelivered: 1,
  /** bad input or configuration: nothing was started */
  invalidInput: 2,
  /** Temporal could not be reached, or another runtime failure */
  failure: 3,
  /** a live control was refused: the delivery is not waiting, already paused, has ended, … */
  refused: 4,
} as const;

/** Prints `value` as JSON, or as the human form `text()` gives. */
export function emit(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
}

/** Ends the process with the error's exit code and a message that names what was wrong. */
export function fail(err: unknown): never {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.invalidInput);
  if (err instanceof InvalidInputError || err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(EXIT.invalidInput);
  }
  if (err instanceof DeliveryControlError) {
    process.stderr.write(`refused: ${err.message}\n`);
    process.exit(EXIT.refused);
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`error: ${message}\n`);
  process.exit(EXIT.failure);
}
