import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { OutageRecording } from '../../../src/endpoints/recording';
import type { OutageFigures } from '../../../src/simulate';
import { runCli } from '../../support/cli';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/**
 * Issue 21: an outage made on a real dev server — 500 deliveries to an endpoint that answers 503 for two
 * minutes, one worker, the default event policy, a retry budget of 5/s and the breaker off — is recorded by the endpoint's
 * workflow and replayed in virtual time. With the policy and budget in force the replay must give what the
 * endpoint lived through, within 10 %; other candidates must move the figures the way the retry-storm
 * benchmark measured (bench/results/results.md, section 4).
 *
 * The budget is half the default on purpose: the replay takes the orchestrator to keep up with its
 * budget (it carries over how late retries went, not a worker or server that could not go faster). On
 * this 2-core machine shared by other jobs, 500 deliveries at 10 retries/s kept the worker so busy that
 * retries went out 5-30 s late and at 7/s, below the budget: a test of a starved machine, not of the replay.
 * Two minutes of real time: long enough for the budget's queue to fill (500 deliveries at 5/s: 100 s), so
 * that the drain after recovery is the budget's, as in a real storm. The test takes 4 to 9 minutes (submitting
 * 500 deliveries takes from 20 s to several minutes on the shared machine).
 *
 * It runs alone, after the rest of `npm test` (REDELIVER_FIDELITY=1, set by `npm test` and `npm run test:fidelity`):
 * the replay carries over how late retries went, not the rate a starved worker achieved, and the suite's other
 * files beside it starved this one. Measured at load 15–26 on 2 cores: requests while down +1.1 %, but peak after
 * recovery +47 % and drain +17 % — retries went out up to 41 s late and first attempts kept arriving 100 s into
 * the drain, while the replay bunched them. At load 7–12 it passed (+2.0 %, −3.7 %, 0 %). A candidate's figures
 * for workers that could not keep up are not what this test checks: docs/outage-replay.md says what the replay
 * assumes.
 */
const fidelity = process.env.REDELIVER_FIDELITY ? test : test.skip;

const BUDGET = { perSecond: 5, burst: 10 };
const DELIVERIES = 500;
const OUTAGE_MS = 120_000;
const EXAMPLE = path.join(__dirname, '..', '..', '..', 'docs', 'outage-example.json');
type Figures = { recorded: OutageFigures; replayed: OutageFigures; deliveries: number };

let harness: Harness;
let receiver: Receiver;
let down = true;

beforeAll(async () => {
  [harness, receiver] = await Promise.all([
    startHarness(testAddress(), { taskQueue: `test-outage-${randomUUID()}`, retryBudget: BUDGET }),
    startReceiver(),
  ]);
  receiver.route('/in', () => (down ? { status: 503 } : { status: 202 }));
});
afterAll(async () => {
  await harness?.stop();
  await receiver?.close();
});

fidelity(
  'a 2-minute outage of 500 deliveries, recorded and replayed: the policy in force reproduces it, other candidates move it as the storm bench says',
  async () => {
    const host = new URL(receiver.url).host;
    // the replay models the policy and the budget, not the circuit breaker (off unless set; off here whatever the default): with it, the endpoint
    // would see one probe a second while down and every held delivery at once after — not what is replayed here
    await harness.redeliver.endpoint(`${receiver.url}/in`).set({ breaker: 'off' });
    const downAt = Date.now();
    // a producer's 500 messages while the endpoint is down: they arrive as fast as this machine submits them
    const handles = await harness.redeliver.submitMany(
      Array.from({ length: DELIVERIES }, (_, i) => ({
        kind: 'event' as const,
        tenant: 'acme',
        device: 'outage',
        messageId: `m-${i}`,
        target: `${receiver.url}/in`,
        payload: { i },
      })),
    );
    expect(handles.every((h) => h.created)).toBe(true);
    await new Promise((r) => setTimeout(r, OUTAGE_MS - (Date.now() - downAt)));
    down = false;
    // every message answered 2xx: what the receiver holds as delivered (500 long polls for results would
    // load the server the test measures)
    await waitFor(
      async () => receiver.accepted().size,
      (n) => n === DELIVERIES,
      420_000,
      'every delivery at the receiver',
    );

    // the recording has every request the endpoint saw once the last reports settled (3 s after each)
    const requests = receiver.requests.filter((r) => r.path === '/in');
    // quiet seconds (first attempts that got through) 5 min away from any failure or retry fold into hours
    const total = (r: OutageRecording) => [...r.seconds, ...r.hours].reduce((n, b) => n + b.requests, 0);
    const settled = (r: OutageRecording) => total(r) === requests.length && r.periods.length === 1 && !r.periods[0]!.ongoing;
    await waitFor(
      async () => settled(await harness.redeliver.endpointRecording(host)),
      (done) => done,
      180_000,
      `the recording of all ${requests.length} requests`,
    );
    const recording = await harness.redeliver.endpointRecording(host);
    expect(recording.budget).toEqual(BUDGET);
    expect(recording.profiles).toHaveLength(1);
    expect(recording.profiles[0]).toMatchObject({ kind: 'event', policy: { jitter: 'full', max: 300_000 } });
    const arrivals = (buckets: OutageRecording['seconds']) => buckets.reduce((n, b) => n + (b.arrivals?.[0] ?? 0), 0);
    expect(arrivals(recording.seconds) + arrivals(recording.hours)).toBe(DELIVERIES);

    // UPDATE_DOCS=1 keeps this run's recording as the worked example of docs/outage-replay.md
    if (process.env.UPDATE_DOCS) writeFileSync(EXAMPLE, `${JSON.stringify(recording, null, 2)}\n`);
    const env = { TEMPORAL_ADDRESS: testAddress(), REDELIVER_TASK_QUEUE: harness.taskQueue };
    const simulate = async (...args: string[]): Promise<Figures> => {
      const run = await runCli(['simulate', '--from-endpoint', host, '--json', ...args], env);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      return JSON.parse(run.stdout) as Figures;
    };
    const inForce = await simulate();
    const { recorded, replayed } = inForce;
    report('policy and budget in force', inForce);

    // what was recorded is what the endpoint lived through
    const refused = requests.filter((r) => r.reply && 'status' in r.reply && r.reply.status === 503).length;
    expect(recorded.requests).toBe(requests.length);
    expect(recorded.requestsWhileDown).toBe(refused);
    // those in quiet hours got through at once whatever the policy: they are counted, not replayed
    expect(inForce.deliveries).toBe(arrivals(recording.seconds));

    // fidelity: the replay with the policy and budget in force, within 10 %
    const within10 = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThanOrEqual(0.1 * b);
    within10(replayed.requestsWhileDown, recorded.requestsWhileDown);
    within10(replayed.peakAfterRecovery, recorded.peakAfterRecovery);
    within10(replayed.drainSeconds, recorded.drainSeconds);
    expect([replayed.expired, replayed.exhausted, recorded.expired, recorded.exhausted]).toEqual([0, 0, 0, 0]);

    // the storm bench (bench/results/results.md §4: 1,000 deliveries all due at once, budget 10/s): without the
    // budget, full jitter sent ~4.8× the requests while down, peaked 2× higher after recovery and took 2.8× as long
    // until all were delivered (284 vs 100 s); without jitter as well, all were delivered far sooner (102 s); with
    // the budget, the jitter made no difference (2,191 vs 2,200 requests while down, 100 s each)
    const noBudget = (await simulate('--budget', 'off')).replayed;
    const noJitter = (await simulate('--budget', 'off', '--jitter', 'none')).replayed;
    const noJitterOnBudget = (await simulate('--jitter', 'none')).replayed;
    const double = (await simulate('--budget', '10/s')).replayed;
    for (const [name, figures] of Object.entries({ noBudget, noJitter, noJitterOnBudget, double }))
      report(name, { ...inForce, replayed: figures });
    expect(noBudget.requestsWhileDown).toBeGreaterThan(2 * recorded.requestsWhileDown);
    // without the budget the peak after recovery is each delivery's own next retry, so how much higher it goes depends
    // on how fast the 500 were submitted, not on the replay: measured on the worked example's recording with its
    // arrivals moved (simulate, 40 seeds each), 1.06–1.61× the budget's when all arrive within 1 s, 1.19–1.77× within
    // 20 s (CI, idle: 7.4 vs 5), 3.6–4.26× spread over the two minutes (the worked example). The direction holds;
    // the storm bench's 2× was one second's peak of 1,000 deliveries started at the same instant.
    expect(noBudget.peakAfterRecovery).toBeGreaterThan(replayed.peakAfterRecovery);
    expect(noBudget.lastRetrySeconds).toBeGreaterThan(recorded.lastRetrySeconds);
    expect(noJitter.lastRetrySeconds).toBeLessThan(noBudget.lastRetrySeconds);
    within10(noJitterOnBudget.requestsWhileDown, replayed.requestsWhileDown);
    within10(noJitterOnBudget.drainSeconds, replayed.drainSeconds);
    // and the budget's own rule: twice the rate lets more out while down, and drains the backlog sooner
    expect(double.requestsWhileDown).toBeGreaterThan(replayed.requestsWhileDown);
    expect(double.drainSeconds).toBeLessThan(replayed.drainSeconds);
    // after recovery the backlog drains at the budget's rate: measured 1.55–1.81× the peak at 5/s, however the arrivals came
    expect(double.peakAfterRecovery).toBeGreaterThan(1.25 * replayed.peakAfterRecovery);

    // the same from a file, and a plot
    const dir = mkdtempSync(path.join(tmpdir(), 'outage-'));
    const exported = await runCli(['endpoint', 'export', host, '--since', '1h'], env);
    expect(exported.code).toBe(0);
    const file = path.join(dir, 'outage.json');
    writeFileSync(file, exported.stdout);
    expect((JSON.parse(exported.stdout) as OutageRecording).periods).toHaveLength(1);
    const plot = path.join(dir, 'replay.svg');
    const fromFile = await runCli(['simulate', '--from-file', file, '--json', '--plot', plot]);
    expect(fromFile.code).toBe(0);
    expect((JSON.parse(fromFile.stdout) as Figures).replayed).toEqual(replayed);
    expect(readFileSync(plot, 'utf8')).toContain(host);
  },
  720_000,
);

function report(name: string, f: Figures): void {
  const row = (o: OutageFigures) =>
    `${o.requests} requests, ${o.requestsWhileDown} while down, peak ${o.peakAfterRecovery}/s, drain ${o.drainSeconds} s (last retry ${o.lastRetrySeconds} s), ${o.expired} expired, ${o.exhausted} exhausted`;
  process.stderr.write(`${name}:\n  recorded ${row(f.recorded)}\n  replayed ${row(f.replayed)}\n`);
}
