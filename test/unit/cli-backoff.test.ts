import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { registerSchedule } from '../../src/cli/schedule';
import { registerSimulate } from '../../src/cli/simulate';
import { InvalidInputError } from '../../src/errors';
import { defaultPolicy } from '../../src/policy';

/** Runs `redeliver <args>` in-process and returns what it printed. */
async function run(...args: string[]): Promise<string> {
  const program = new Command('redeliver').exitOverride();
  registerSchedule(program);
  registerSimulate(program);
  const out: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && err.code === 'commander.helpDisplayed')) throw err;
  } finally {
    spy.mockRestore();
  }
  return out.join('');
}

/** The flags an InvalidInputError names, in order. */
async function badFlags(...args: string[]): Promise<{ field: string; message: string }[]> {
  const error = await run(...args).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(InvalidInputError);
  return (error as InvalidInputError).problems;
}

const tmp = mkdtempSync(path.join(tmpdir(), 'redeliver-cli-'));

interface ScheduleReport {
  kind: string;
  policy: unknown;
  draws: number;
  attempts: { attempt: number; draws: number; minMs: number; medianMs: number; p95Ms: number; latestMs: number | null }[];
  endings: { expired: number; exhausted: number; ongoing: number };
}

describe('redeliver schedule', () => {
  test("--json: per attempt min, median, p95 and latest offset, for the kind's default policy", async () => {
    const report = JSON.parse(await run('schedule', '--json')) as ScheduleReport;
    expect(report).toMatchObject({ kind: 'event', policy: defaultPolicy('event'), draws: 10_000, endings: { ongoing: 10_000 } });
    expect(report.attempts).toHaveLength(15);
    expect(report.attempts[1]).toEqual({ attempt: 2, draws: 10_000, minMs: 200, medianMs: 200, p95Ms: 200, latestMs: 200 });
    for (const a of report.attempts) {
      expect(a.minMs).toBeLessThanOrEqual(a.medianMs);
      expect(a.medianMs).toBeLessThanOrEqual(a.p95Ms);
      expect(a.p95Ms).toBeLessThanOrEqual(a.latestMs!);
    }
    // the reconnect guarantee, as the preview shows it
    expect(report.attempts[2]!.latestMs).toBeLessThanOrEqual(180_000);
  });

  test('policy flags set the policy: a deterministic one gives exact offsets', async () => {
    const report = JSON.parse(
      await run('schedule', '--jitter', 'none', '--initial', '1s', '--max', '4s', '--attempts', '5', '--draws', '10', '--json'),
    ) as ScheduleReport;
    expect(report.attempts.map((a) => [a.minMs, a.medianMs, a.p95Ms])).toEqual([0, 1_000, 3_000, 7_000, 11_000].map((t) => [t, t, t]));
  });

  test("a kind's age bound ends the schedule: command responses expire after 5 min", async () => {
    const report = JSON.parse(
      await run('schedule', '--kind', 'command-response', '--attempts', '40', '--draws', '2000', '--json'),
    ) as ScheduleReport;
    expect(report.endings.expired).toBe(2_000);
    for (const a of report.attempts) expect(a.p95Ms).toBeLessThanOrEqual(300_000);
  });

  test('the human form says the policy in words and tabulates the attempts', async () => {
    const text = await run('schedule', '--kind', 'telemetry', '--attempts', '4', '--draws', '100');
    expect(text).toContain('telemetry: full jitter');
    expect(text).toContain('expires 1 h after the first attempt');
    expect(text).toMatch(/^3 +400 ms +\S+ ms +\S+ ms +600 ms +always$/m);
  });

  test('--plot writes the picture', async () => {
    const file = path.join(tmp, 'schedule.svg');
    await run('schedule', '--draws', '500', '--plot', file);
    const svg = readFileSync(file, 'utf8');
    expect(svg).toContain('When a failing event delivery is attempted again');
    expect(svg).toContain('reconnection window, 3 min');
  });

  test('bad flags: every problem at once, each naming its flag', async () => {
    const problems = await badFlags(
      'schedule',
      '--max=-5s',
      '--multiplier',
      '0.5',
      '--jitter',
      'wild',
      '--max-attempts',
      'x',
      '--draws',
      'many',
      '--attempt-time',
      'soon',
      '--plot',
      'out.gif',
    );
    expect(problems.map((p) => p.field).sort()).toEqual([
      '--attempt-time',
      '--draws',
      '--jitter',
      '--max',
      '--max-attempts',
      '--multiplier',
      '--plot',
    ]);
    expect(problems.find((p) => p.field === '--max')!.message).toContain('"-5s"');
    expect(problems.find((p) => p.field === '--multiplier')!.message).toContain('0.5');
  });

  test('bad flags: kind, qos, inverted bounds, a deadline in the past', async () => {
    expect((await badFlags('schedule', '--kind', 'gadget')).map((p) => p.field)).toEqual(['--kind']);
    expect((await badFlags('schedule', '--kind', 'telemetry', '--qos', '2')).map((p) => p.field)).toEqual(['--qos']);
    expect(await badFlags('schedule', '--min', '10s', '--max', '5s')).toEqual([
      { field: '--min', message: 'must not exceed --max, got 10 s > 5 s' },
    ]);
    expect((await badFlags('schedule', '--deadline', '2020-01-01')).map((p) => p.field)).toEqual(['--deadline']);
  });

  test('--help shows every option with its default, and examples', async () => {
    const help = await run('schedule', '--help');
    expect(help).toContain('--draws <n>');
    expect(help).toContain('(default: "10000")');
    expect(help).toContain('$ redeliver schedule --kind telemetry');
  });
});

interface SimulateRow {
  strategy: string;
  clients: number;
  runs: number;
  calls: number;
  completionMs: number;
}

describe('redeliver simulate', () => {
  // how fast the experiment runs is measured by the benchmarks, not here (a loaded machine is slow at anything)
  test('--clients 100 --runs 100 --strategy all --json: strategies ranked by work as in the article', async () => {
    const rows = JSON.parse(await run('simulate', '--clients', '100', '--runs', '100', '--strategy', 'all', '--json')) as SimulateRow[];

    expect(rows.map((r) => r.strategy)).toEqual(['no-backoff', 'exponential', 'full', 'equal', 'decorrelated']);
    for (const r of rows) expect(Object.keys(r).sort()).toEqual(['calls', 'clients', 'completionMs', 'runs', 'strategy']);
    const at = Object.fromEntries(rows.map((r) => [r.strategy, r])) as Record<string, SimulateRow>;
    const calls = (s: string) => at[s]!.calls;
    const time = (s: string) => at[s]!.completionMs;
    // work: no backoff > exponential > every jittered strategy; full jitter the least ("Equal Jitter does
    // slightly more work than Full Jitter"; "Full Jitter uses less work" than Decorrelated)
    expect(calls('no-backoff')).toBeGreaterThan(calls('exponential'));
    for (const jittered of ['full', 'equal', 'decorrelated']) expect(calls('exponential')).toBeGreaterThan(1.5 * calls(jittered));
    expect(calls('equal')).toBeGreaterThan(calls('full'));
    expect(calls('decorrelated')).toBeGreaterThan(calls('full'));
    // time: exponential without jitter is the clear loser; equal takes much longer than full; decorrelated
    // is slightly quicker than full
    for (const jittered of ['full', 'equal', 'decorrelated']) expect(time('exponential')).toBeGreaterThan(5 * time(jittered));
    expect(time('equal')).toBeGreaterThan(1.2 * time('full'));
    expect(time('decorrelated')).toBeLessThan(time('full'));
  }, 180_000);

  test('one strategy gives the same numbers as it does among all', async () => {
    const all = JSON.parse(await run('simulate', '--clients', '20', '--runs', '10', '--json')) as SimulateRow[];
    const full = JSON.parse(await run('simulate', '--clients', '20', '--runs', '10', '--strategy', 'full', '--json')) as SimulateRow[];
    expect(full).toEqual(all.filter((r) => r.strategy === 'full'));
  });

  test("--min floors the jittered waits as a policy's min does: full jitter at redeliver's scale", async () => {
    const args = ['simulate', '--clients', '30', '--runs', '20', '--strategy', 'full', '--base', '100ms', '--cap', '300s', '--json'];
    const [free] = JSON.parse(await run(...args)) as SimulateRow[];
    const [floored] = JSON.parse(await run(...args, '--min', '200ms')) as SimulateRow[];
    // a 200 ms floor under a first window of 200 ms makes every first retry wait exactly 200 ms: slower
    expect(floored!.completionMs).toBeGreaterThan(free!.completionMs);
  });

  test('the human form tabulates calls and completion per strategy', async () => {
    const text = await run('simulate', '--clients', '10', '--runs', '5');
    expect(text).toContain('10 clients, mean of 5 runs; base 5 ms, cap 2 s');
    for (const name of ['no backoff', 'exponential, no jitter', 'full jitter', 'equal jitter', 'decorrelated jitter'])
      expect(text).toContain(name);
  });

  test('--plot draws calls and time against the number of clients, one line per strategy', async () => {
    const file = path.join(tmp, 'simulate.svg');
    await run('simulate', '--clients', '20', '--runs', '5', '--plot', file);
    const svg = readFileSync(file, 'utf8');
    for (const words of [
      'Work: write calls the server handled',
      'Time until every client had succeeded',
      'clients contending for the row',
      'full jitter',
      'no backoff',
    ]) {
      expect(svg).toContain(words);
    }
  });

  test('bad flags: every problem at once, each naming its flag', async () => {
    const problems = await badFlags(
      'simulate',
      '--clients',
      '0',
      '--runs',
      'x',
      '--strategy',
      'fastest',
      '--base=-1ms',
      '--cap',
      'soon',
      '--min=-1ms',
      '--plot',
      'a.pdf',
    );
    expect(problems.map((p) => p.field).sort()).toEqual(['--base', '--cap', '--clients', '--min', '--plot', '--runs', '--strategy']);
    expect(await badFlags('simulate', '--base', '5s', '--cap', '1s')).toEqual([
      { field: '--base', message: 'must not exceed --cap, got 5 s > 1 s' },
    ]);
  });

  test('--help names the article and shows an example', async () => {
    const help = await run('simulate', '--help');
    expect(help).toContain('Exponential Backoff And Jitter');
    expect(help).toContain('$ redeliver simulate --clients 100 --runs 100 --strategy all --json');
  });
});

interface VolumeReport {
  scenario: { downMs: number; workers: number | null };
  costs: { workerRate: number };
  rates: { rate: number; today: { backlog: number }; holds: { backlog: number; workers: number }; breaksNext: string }[];
}

describe('redeliver simulate --outage-at-volume', () => {
  test('--json: both designs per rate, with the scenario and the costs the flags set', async () => {
    const report = JSON.parse(
      await run('simulate', '--outage-at-volume', '--rate', '1000,2000', '--worker-rate', '850.5', '--workers', '4', '--json'),
    ) as VolumeReport;
    expect(report.costs.workerRate).toBe(850.5);
    expect(report.scenario).toMatchObject({ downMs: 60_000, workers: 4 });
    expect(report.rates.map((r) => r.rate)).toEqual([1000, 2000]);
    expect(report.rates[1]!.today.backlog).toBe(2 * report.rates[0]!.today.backlog);
    expect(report.rates[0]!.holds.workers).toBe(4);
  });

  test('text: a column per rate and design, and where the hold design breaks next, a sentence per rate', async () => {
    const text = await run('simulate', '--outage-at-volume', '--rate', '1000,10000', '--down', '30s');
    expect(text).toContain('An outage of 30 s');
    expect(text).toMatch(/1,000\/s\s+10,000\/s/);
    expect(text).toMatch(/requests while down\s+[\d,]+\s+[\d,]+/);
    expect(text).toMatch(/^At 1,000 msg\/s .+\.$/m);
    expect(text).toMatch(/^At 10,000 msg\/s .+\.$/m);
  });

  test('bad flags: every problem at once, and flags of the other runs refused', async () => {
    const problems = await badFlags(
      'simulate',
      '--outage-at-volume',
      '--rate',
      '0,x',
      '--down',
      'soon',
      '--budget',
      'off',
      '--held-bytes',
      '-1',
    );
    expect(problems.map((p) => p.field).sort()).toEqual(['--budget', '--down', '--held-bytes', '--rate', '--rate']);
    expect(await badFlags('simulate', '--outage-at-volume', '--clients', '5', '--seed', '2')).toEqual([
      { field: '--clients', message: "is for Brooker's experiment" },
      { field: '--seed', message: "is for Brooker's experiment or a replay (--from-endpoint, --from-file)" },
    ]);
    expect(await badFlags('simulate', '--worker-rate', '900')).toEqual([{ field: '--worker-rate', message: 'is for --outage-at-volume' }]);
    expect(await badFlags('simulate', '--budget', '5/s')).toEqual([
      { field: '--budget', message: 'is for a replay (--from-endpoint, --from-file) or --outage-at-volume' },
    ]);
  });
});
