/** One problem with a field of the input: `field` is a dotted path such as `policy.max`. */
export interface Problem {
  field: string;
  message: string;
}

/** Bad input, refused before anything starts; lists every problem found, each naming its field. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(
    readonly problems: Problem[],
    what = 'input',
  ) {
    super(`invalid ${what}:\n${problems.map((p) => `  - ${p.field}: ${p.message}`).join('\n')}`);
  }
}
