import { CommanderError } from 'commander';
import { ConfigError } from '../config/errors';
import { DeliveryControlError, InvalidInputError } from '../errors';

/** Exit codes scripts can rely on (docs/cli.md, "Exit codes"). */
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

/**
 * Prints `value` as JSON, or in the human form `text()` gives: one line, or a list of lines. Each line is
 * made safe for a terminal, a line break in it included (`\x0a`): only the list makes lines, so a value
 * from outside (an id, a reason, a topic) cannot add one.
 */
export function emit(json: boolean, value: unknown, text: () => string | readonly string[]): void {
  if (json) return void process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  const lines = text();
  process.stdout.write(`${(typeof lines === 'string' ? [lines] : lines).map((line) => printable(line)).join('\n')}\n`);
}

/**
 * C0 and C1 controls, DEL, bidi controls and Unicode line separators. In what an endpoint, a producer or an
 * error message says, these would let it drive the terminal that shows it (set its title, clear it, move
 * the cursor, hide text behind a carriage return, reorder a line); JSON output escapes them already.
 */
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Text for a terminal: every unprintable character shown as an escape (`\x1b`, `\u202e`); newlines kept only if asked. */
export function printable(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(UNPRINTABLE, (c) => {
    if (c === '\n' && options.keepNewlines) return c;
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A copy of a record whose every string is printable, newlines escaped too: each field stays on its line. */
export function printableFields<T>(value: T): T {
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) => (typeof v === 'string' ? printable(v) : v)) as T;
}

/** Ends the process with the error's exit code and a message that names what was wrong. */
export function fail(err: unknown): never {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.invalidInput);
  if (err instanceof InvalidInputError || err instanceof ConfigError) {
    process.stderr.write(`${printable(err.message, { keepNewlines: true })}\n`);
    process.exit(EXIT.invalidInput);
  }
  if (err instanceof DeliveryControlError) {
    process.stderr.write(`refused: ${printable(err.message, { keepNewlines: true })}\n`);
    process.exit(EXIT.refused);
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`error: ${printable(message, { keepNewlines: true })}\n`);
  process.exit(EXIT.failure);
}
