import { wholeNumber } from '../validation/whole-number';

export { wholeNumber };
import { InvalidInputError, type Problem } from '../errors';

/** One whole-number flag on its own: a bad value is an InvalidInputError naming the flag (exit 2). */
export function wholeNumberFlag(flag: string, value: string, min: number, max?: number): number {
  const problems: Problem[] = [];
  const n = wholeNumber(problems, flag, value, min, max);
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  return n;
}
