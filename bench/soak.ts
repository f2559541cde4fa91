/**
 * The soak test's larger run (test/integration/durability/soak.test.ts runs 2,000 in CI):
 *
 *   npx tsc -p bench/tsconfig.json && node dist-bench/bench/soak.js [--deliveries 20000] [--seed bench-soak-1]
 *
 * On a dev server of its own with file persistence (SQLite as the other benchmarks run it) and one
 * in-process worker, to an endpoint that fails at random (25 % 5xx, 10 % connection resets, 5 % answers
 * slower than the 500 ms attempt timeout): every delivery must end in exactly one outcome, the receiver
 * must hold every delivered message id and no id that was not submitted. Writes bench/results/soak.json
 * and soak.md; exits 1 if anything was lost.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { Redeliver } from '../src/client/index';
import { TEMPORAL_CLI_VERSION } from '../src/dev/temporal-cli';
import { createWorker, installRuntime, runtimeSettingsFromEnv, runWorker } from '../src/worker';
import { startReceiver } from '../test/support/receiver';
import { BENCH_SQLITE_PRAGMAS, startBenchServer } from './harness';
import { runSoak } from './soak-run';

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

async function main(): Promise<void> {
  const deliveries = Number(flag('deliveries', '20000'));
  const seed = flag('seed', 'bench-soak-1');
  if (!Number.isInteger(deliveries) || deliveries <= 0) throw new Error(`--deliveries must be a whole number above 0, got ${deliveries}`);
  installRuntime({ ...runtimeSettingsFromEnv(), logLevel: 'ERROR' });
  const bench = await startBenchServer(7391);
  const receiver = await startReceiver();
  const taskQueue = 'bench-soak';
  const worker = await createWorker({
    address: bench.server.address,
    taskQueue,
    allowAddresses: ['loopback'],
    maxConcurrentAttempts: 500,
    workerOptions: { maxConcurrentWorkflowTaskExecutions: 200 },
  });
  const running = runWorker(worker);
  try {
    const started = Date.now();
    const cpuBefore = process.cpuUsage();
    const report = await runSoak({
      redeliver: new Redeliver(bench.client, { taskQueue }),
      client: bench.client,
      receiver,
      deliveries,
      seed,
      submitConcurrency: 64,
      timeoutMs: 60 * 60_000,
      log: (line) => console.log(line),
    });
    const cpu = process.cpuUsage(cpuBefore);
    const result = {
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        memoryGb: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        temporalCli: TEMPORAL_CLI_VERSION,
        sqlitePragmas: BENCH_SQLITE_PRAGMAS,
      },
      seed,
      ...report.figures,
      workerAndReceiverCpuSeconds: Math.round((cpu.user + cpu.system) / 1e5) / 10,
      wallSeconds: Math.round((Date.now() - started) / 100) / 10,
      problems: report.problems,
    };
    const outDir = path.join(__dirname, '..', '..', 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path.join(outDir, 'soak.json'), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(path.join(outDir, 'soak.md'), markdown(result));
    console.log(markdown(result));
    if (report.problems.length > 0) process.exitCode = 1;
  } finally {
    worker.shutdown();
    await running;
    await receiver.close();
    await bench.stop();
  }
}

function markdown(r: {
  date: string;
  seed: string;
  deliveries: number;
  outcomes: Record<string, number>;
  attempts: number;
  requests: number;
  duplicateIds: number;
  heldNotDelivered: number;
  lateAnswers: number;
  seconds: { submit: number; total: number };
  deliveriesPerSecond: number;
  wallSeconds: number;
  problems: string[];
}): string {
  const outcomes = Object.entries(r.outcomes)
    .map(([o, n]) => `${o} ${n.toLocaleString('en')}`)
    .join(', ');
  return (
    [
      `# Soak (${r.date.slice(0, 10)}, seed ${r.seed})`,
      '',
      '| figure | value |',
      '|---|---|',
      `| deliveries | ${r.deliveries.toLocaleString('en')} |`,
      `| outcomes | ${outcomes} |`,
      `| attempts (requests at the receiver) | ${r.attempts.toLocaleString('en')} (${r.requests.toLocaleString('en')}) |`,
      `| message ids the receiver took twice | ${r.duplicateIds.toLocaleString('en')} (each after a 2xx it answered too late, ${r.lateAnswers.toLocaleString('en')} in all) |`,
      `| ids the receiver took, of deliveries that then ended unsuccessfully | ${r.heldNotDelivered.toLocaleString('en')} |`,
      `| time: submitting / until the last ended | ${r.seconds.submit} s / ${r.seconds.total} s (${r.deliveriesPerSecond} deliveries/s) |`,
      `| lost, invented or unexplained | ${r.problems.length === 0 ? 'none' : r.problems.length} |`,
      '',
      ...r.problems.map((p) => `- ${p}`),
    ].join('\n') + '\n'
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
