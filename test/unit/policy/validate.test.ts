import { InvalidInputError } from '../../../src/errors';
import { defaultPolicy, policyProblems, validatePolicy, type BackoffPolicyInput, type PolicyContext } from '../../../src/policy';

const NOW = Date.UTC(2026, 5, 1);
const ctx: PolicyContext = { kind: 'event', now: NOW };
const problemsOf = (input: unknown, context: PolicyContext = ctx) => policyProblems(input as BackoffPolicyInput, context);
/** The one problem an input has. */
const only = (input: unknown, context?: PolicyContext) => {
  const problems = problemsOf(input, context);
  expect(problems).toHaveLength(1);
  return problems[0]!;
};

describe('defaults per kind (docs/spec.md §2, §3)', () => {
  test("the guide's values for every kind: full jitter, 200 ms initial and min, ×2, 300 s max", () => {
    for (const [kind, qos] of [
      ['telemetry', 1],
      ['event', 1],
      ['command-response', 1],
    ] as const) {
      expect(defaultPolicy(kind, qos)).toMatchObject({
        jitter: 'full',
        initial: 200,
        multiplier: 2,
        min: 200,
        max: 300_000,
        maxAttempts: 0,
        deadline: null,
      });
    }
  });

  test('age bounds: telemetry QoS 1 1 h, events 7 days, command responses 5 min; QoS 0 is sent once', () => {
    expect(defaultPolicy('telemetry').maxAge).toBe(3_600_000);
    expect(defaultPolicy('event').maxAge).toBe(7 * 86_400_000);
    expect(defaultPolicy('command-response').maxAge).toBe(300_000);
    expect(defaultPolicy('telemetry', 0)).toMatchObject({ maxAttempts: 1, maxAge: null });
  });

  test('no input gives the defaults; the kind defaults to event', () => {
    expect(validatePolicy(undefined, { kind: 'telemetry', now: NOW })).toEqual(defaultPolicy('telemetry'));
    expect(validatePolicy()).toEqual(defaultPolicy('event'));
  });

  test("a command response's deadline replaces its 5 min age bound", () => {
    const deadline = new Date(NOW + 60_000).toISOString();
    expect(validatePolicy({ deadline }, { kind: 'command-response', now: NOW })).toMatchObject({ deadline: NOW + 60_000, maxAge: null });
    expect(validatePolicy({ deadline }, { kind: 'event', now: NOW }).maxAge).toBe(7 * 86_400_000);
  });
});

describe('accepted input', () => {
  test('durations as milliseconds or strings', () => {
    expect(validatePolicy({ initial: '200ms', min: 0, max: '5m', maxAge: '7 days' }, ctx)).toMatchObject({
      initial: 200,
      min: 0,
      max: 300_000,
      maxAge: 604_800_000,
    });
    expect(validatePolicy({ initial: 250, max: '1.5h' }, ctx)).toMatchObject({ initial: 250, max: 5_400_000 });
  });

  test('a deadline as a Date, epoch ms or ISO string; maxAge null removes the age bound', () => {
    for (const deadline of [new Date(NOW + 1_000), NOW + 1_000, new Date(NOW + 1_000).toISOString()]) {
      expect(validatePolicy({ deadline, maxAge: null }, ctx)).toMatchObject({ deadline: NOW + 1_000, maxAge: null });
    }
  });

  test('every field at once', () => {
    const input: BackoffPolicyInput = {
      jitter: 'decorrelated',
      initial: '1s',
      multiplier: 3,
      min: '500ms',
      max: '1m',
      maxAttempts: 10,
      maxAge: '1h',
      deadline: NOW + 86_400_000,
    };
    expect(validatePolicy(input, ctx)).toEqual({
      jitter: 'decorrelated',
      initial: 1_000,
      multiplier: 3,
      min: 500,
      max: 60_000,
      maxAttempts: 10,
      maxAge: 3_600_000,
      deadline: NOW + 86_400_000,
    });
  });
});

describe('every validation error names the field and the value', () => {
  test.each([
    ['unknown field', { retries: 5 }, 'retries', /not a known field.*jitter, initial/],
    ['unknown strategy', { jitter: 'random' }, 'jitter', /one of full, equal, decorrelated, none, got "random"/],
    ['zero initial', { initial: 0 }, 'initial', /must be above 0, got 0/],
    ['negative initial', { initial: '-5s' }, 'initial', /must be above 0, got "-5s"/],
    ['initial that is no duration', { initial: 'soon' }, 'initial', /duration .* got "soon"/],
    ['negative min', { min: -1 }, 'min', /must be 0 or more, got -1/],
    ['zero max', { max: '0s' }, 'max', /must be above 0, got "0s"/],
    ['NaN max', { max: NaN }, 'max', /got NaN/],
    ['zero maxAge', { maxAge: 0 }, 'maxAge', /must be above 0, got 0/],
    ['min above max', { min: '10s', max: '5s' }, 'min', /must not exceed max, got 10 s > 5 s/],
    ['initial above max', { initial: '10m' }, 'initial', /must not exceed max, got 10 min > 5 min/],
    ['multiplier under 1', { multiplier: 0.5 }, 'multiplier', /≥ 1.*got 0\.5/],
    ['multiplier that is no number', { multiplier: 'two' }, 'multiplier', /got "two"/],
    ['negative maxAttempts', { maxAttempts: -1 }, 'maxAttempts', /whole number ≥ 0.*got -1/],
    ['fractional maxAttempts', { maxAttempts: 2.5 }, 'maxAttempts', /got 2\.5/],
    [
      'deadline in the past',
      { deadline: '2020-01-01T00:00:00Z' },
      'deadline',
      /in the past: got "2020-01-01T00:00:00Z", now is 2026-06-01/,
    ],
    ['deadline now', { deadline: NOW }, 'deadline', /in the past/],
    ['deadline that is no date', { deadline: 'tomorrow' }, 'deadline', /must be a date .*got "tomorrow"/],
    // longer than a timer or a Date can hold would leave the delivery stuck (issue 15)
    ['max beyond 10 years', { max: 1e300, initial: 1000 }, 'max', /at most 10 years \(3650 days\), got 1e\+300/],
    ['maxAge beyond 10 years', { maxAge: '11 years' }, 'maxAge', /at most 10 years \(3650 days\), got "11 years"/],
  ])('%s', (_name, input, field, message) => {
    const problem = only(input);
    expect(problem.field).toBe(field);
    expect(problem.message).toMatch(message);
  });

  test('telemetry QoS 0 may not ask for retries', () => {
    expect(only({ maxAttempts: 3 }, { kind: 'telemetry', qos: 0, now: NOW })).toMatchObject({
      field: 'maxAttempts',
      message: expect.stringMatching(/QoS 0.*got 3/),
    });
  });

  test('an input that is not an object', () => {
    expect(only('fast')).toMatchObject({ field: '(policy)', message: expect.stringContaining('"fast"') });
  });

  test('validatePolicy throws one InvalidInputError listing every problem', () => {
    const input = {
      jitter: 'fast',
      initial: -1,
      multiplier: 0,
      min: '1h',
      deadline: 'yesterday',
      colour: 'red',
    } as unknown as BackoffPolicyInput;
    let error: unknown;
    try {
      validatePolicy(input, ctx);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    const problems = (error as InvalidInputError).problems;
    expect(problems.map((p) => p.field).sort()).toEqual(['colour', 'deadline', 'initial', 'jitter', 'min', 'multiplier']);
    for (const field of ['colour', 'deadline', 'initial', 'jitter', 'min', 'multiplier'])
      expect((error as Error).message).toContain(`- ${field}: `);
  });
});
