/**
 * Issue 32: where the worker's CPU goes for messages delivered at once. Runs section 6's redeliver batch row alone
 * (bench/volume.ts: a dev server, the sink, a fresh worker process, `submitBatch` in batches of 500) with the worker
 * under `--cpu-prof` (REDELIVER_BENCH_CPU_PROF), cuts the main thread's profile to the row's measured span, and writes
 * `bench/results/<name>.md` (the worker's CPU per message by thread, then by category, module, function and file),
 * `<name>.svg` (a flame graph) and `<name>.folded` (folded stacks). First the same row without the profiler, on a
 * worker of its own, for the profiler's own cost.
 *
 * `node dist-bench/bench/profile-batch.js [--messages 20000] [--name profile-batch-before] [--interval 250] [--no-plain] [--peers]`
 * (`--peers`: section 6's sink-alone and BullMQ rows first, in the same run, for their CPU per message).
 * (`--interval`: the sampling interval, µs). The profiles themselves (tens of MB) stay in a temporary folder.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { startFlakyEndpoint } from '../src/demo/flaky-endpoint';
import { installRuntime } from '../src/worker';
import { analyseProfile, flameGraphSvg, foldedText, reportTables, type CpuProfile } from './cpu-profile';
import { round, startBenchServer, type WorkerProcess } from './harness';
import { bullmqVolume } from './bullmq';
import { redeliverBatchVolume } from './redeliver-volume';
import { sinkAlone } from './volume';
import type { VolumeRow } from './volume-row';

/** One thread's CPU time (ms) by thread id, with its name, read from /proc (Linux). */
type Threads = Map<number, { name: string; cpuMs: number }>;

function threadsOf(pid: number): Threads {
  const threads: Threads = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      threads.set(Number(tid), { name, cpuMs: (Number(stat[11]) + Number(stat[12])) * 10 });
    } catch {
      // the thread ended meanwhile
    }
  }
  return threads;
}

/** The CPU each thread spent between two readings, grouped by thread name; the main thread (its id the pid's) apart. */
function threadCpu(
  pid: number,
  before: Threads,
  after: Threads,
): { main: number; byName: Map<string, { threads: number; cpuMs: number }> } {
  const byName = new Map<string, { threads: number; cpuMs: number }>();
  let main = 0;
  for (const [tid, t] of after) {
    const spent = t.cpuMs - (before.get(tid)?.cpuMs ?? 0);
    if (tid === pid) {
      main = spent;
      continue;
    }
    const entry = byName.get(t.name) ?? { threads: 0, cpuMs: 0 };
    byName.set(t.name, { threads: entry.threads + 1, cpuMs: entry.cpuMs + spent });
  }
  return { main, byName };
}

/** What a worker's threads are, by the name Linux shows (at most 15 characters). */
const THREAD_ROLES: Record<string, string> = {
  node: "V8's platform workers (concurrent GC, compilers), the workflow thread, libuv's pool: Node names none of them",
  'v8:ProfEvntProc': 'the profiler itself',
  'tokio-runtime-w': "the SDK's Rust core: gRPC, task polling",
  'temporal-real-s': "the SDK core's resource tuner sampling the system",
  'workflow-proces': "the SDK core's workflow processing (activations)",
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Measured {
  row: VolumeRow;
  pid: number;
  /** The measured span in the monotonic clock that V8's profiles use (µs). */
  fromUs: number;
  toUs: number;
  mainCpuMs: number;
  byName: Map<string, { threads: number; cpuMs: number }>;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
}

async function main(): Promise<void> {
  const messages = Number(arg('messages', '20000'));
  const name = arg('name', 'profile-batch-before');
  const interval = Number(arg('interval', '250'));
  const outDir = path.join(__dirname, '..', '..', 'bench', 'results');
  const profiles = mkdtempSync(path.join(tmpdir(), 'redeliver-cpu-prof-'));
  installRuntime();
  const bench = await startBenchServer(await freePort());
  const sink = await startFlakyEndpoint();
  const measure = async (): Promise<Measured> => {
    let threads: Threads = new Map();
    let span: Omit<Measured, 'row'> | null = null;
    let from = { pid: 0, fromUs: 0 };
    const measuring = (phase: 'start' | 'end', worker: WorkerProcess) => {
      const pid = worker.child.pid!;
      const now = Number(process.hrtime.bigint() / 1000n);
      if (phase === 'start') {
        threads = threadsOf(pid);
        from = { pid, fromUs: now };
        return;
      }
      const { main, byName } = threadCpu(pid, threads, threadsOf(pid));
      span = { ...from, toUs: now, mainCpuMs: main, byName };
    };
    const row = await redeliverBatchVolume(bench, sink, messages, { measuring });
    sink.received.length = 0;
    if (!span) throw new Error('the run was not measured');
    return { row, ...(span as Omit<Measured, 'row'>) };
  };
  try {
    const peers: VolumeRow[] = [];
    if (process.argv.includes('--peers')) {
      peers.push(await sinkAlone(sink, messages));
      sink.received.length = 0;
      peers.push(await bullmqVolume(sink, messages));
      sink.received.length = 0;
      for (const p of peers) console.log(`${p.system}: worker CPU ${p.workerCpuMsPerMessage} ms/message, ${p.perSecond}/s`);
    }
    const plain = process.argv.includes('--no-plain') ? null : await measure();
    if (plain) console.log(`without the profiler: worker CPU ${plain.row.workerCpuMsPerMessage} ms/message, ${plain.row.perSecond}/s`);
    process.env.REDELIVER_BENCH_CPU_PROF = profiles;
    process.env.REDELIVER_BENCH_CPU_PROF_INTERVAL = String(interval);
    const profiled = await measure();
    delete process.env.REDELIVER_BENCH_CPU_PROF;
    console.log(`with the profiler: worker CPU ${profiled.row.workerCpuMsPerMessage} ms/message, ${profiled.row.perSecond}/s`);
    write(outDir, name, { messages, interval, peers, plain, profiled, profiles });
  } finally {
    await sink.close();
    await bench.stop();
  }
}

/** The worker's profiles are `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`; thread 0 is its main thread. */
function profileFiles(dir: string, pid: number): { main: string; others: string[] } {
  const files = readdirSync(dir).filter((f) => f.split('.')[3] === String(pid));
  const main = files.find((f) => f.split('.')[4] === '0');
  if (!main) throw new Error(`no main-thread profile of ${pid} in ${dir}: ${files.join(', ')}`);
  return { main: path.join(dir, main), others: files.filter((f) => f !== main).map((f) => path.join(dir, f)) };
}

function write(
  outDir: string,
  name: string,
  run: { messages: number; interval: number; peers: VolumeRow[]; plain: Measured | null; profiled: Measured; profiles: string },
): void {
  const { messages, profiled, plain } = run;
  const files = profileFiles(run.profiles, profiled.pid);
  const profile = JSON.parse(readFileSync(files.main, 'utf8')) as CpuProfile;
  if (profiled.fromUs < profile.startTime || profiled.toUs > profile.endTime)
    throw new Error(
      `the measured span ${profiled.fromUs}–${profiled.toUs} µs is not within the profile's ${profile.startTime}–${profile.endTime}`,
    );
  const a = analyseProfile(profile, profiled.fromUs, profiled.toUs);
  // the sampled busy time is wall time while busy: scaled to the main thread's CPU time over the same span
  const scale = profiled.mainCpuMs / (a.busyUs / 1000);
  const perMessage = (cpuMs: number) => round(cpuMs / messages, 4);
  const processCpu = profiled.row.workerCpuMsPerMessage;
  const spanS = (profiled.toUs - profiled.fromUs) / 1e6;
  const workflowThreads = files.others.map((f) => {
    const p = analyseProfile(JSON.parse(readFileSync(f, 'utf8')) as CpuProfile, profiled.fromUs, profiled.toUs);
    return { file: path.basename(f), busyMs: p.busyUs / 1000, analysis: p };
  });
  const folded = foldedText(a, 1_000_000);
  writeFileSync(path.join(outDir, `${name}.folded`), folded.text);
  const profilerMs = profiled.byName.get('v8:ProfEvntProc')?.cpuMs ?? 0;
  const without = plain && round(plain.row.workerCpuMsPerMessage / (processCpu - profilerMs / messages), 2);
  const lines = [
    `# Where the worker's CPU goes: ${messages} messages delivered at once in batches (section 6's batch row)`,
    '',
    `${new Date().toISOString()} · ${cpus().length} cores (shared) · Node ${process.version} · \`node dist-bench/bench/profile-batch.js --messages ${messages} --interval ${run.interval}${run.peers.length ? ' --peers' : ''}\` (bench/profile-batch.ts).`,
    '',
    "Section 6's redeliver-batch row alone: a dev server, the sink, a fresh worker process (worker-process.ts, defaults: retry budget, endpoint health,",
    `limits and outage holds on), \`submitBatch\` of ${messages} messages in batches of 500, measured from the first submit until the sink had every message's`,
    "2xx and every batch's workflow had closed. The worker ran under `--cpu-prof` with a sampling interval of " +
      `${run.interval} µs; its main thread's profile is cut to that span (${round(spanS, 2)} s; ` +
      `${profiled.fromUs}–${profiled.toUs} µs in the profiles' clock).`,
    '',
    '## The run',
    '',
    '| | messages /s | worker CPU ms / message (process) |',
    '|---|---|---|',
    ...run.peers.map((p) => `| ${p.system} (section 6's, in the same run) | ${p.perSecond} | ${p.workerCpuMsPerMessage} |`),
    ...(plain
      ? [`| without the profiler (a worker of its own, first) | ${plain.row.perSecond} | ${plain.row.workerCpuMsPerMessage} |`]
      : []),
    `| with the profiler | ${profiled.row.perSecond} | ${processCpu} |`,
    '',
    "The profiled run's CPU by thread (/proc, over the span): the profile samples only the main thread (JavaScript: the activities, the",
    "SDK's TypeScript side, undici); the others are the SDK's Rust core (tokio), V8's helpers (concurrent GC, compilers), libuv's pool and",
    'the workflow thread.',
    '',
    '| thread | threads | CPU ms / message | share of the process |',
    '|---|---|---|---|',
    `| main (JavaScript) | 1 | ${perMessage(profiled.mainCpuMs)} | ${((100 * profiled.mainCpuMs) / (processCpu * messages)).toFixed(1)}% |`,
    ...[...profiled.byName]
      .sort((x, y) => y[1].cpuMs - x[1].cpuMs)
      .map(
        ([n, t]) =>
          `| ${n}${THREAD_ROLES[n] ? ` (${THREAD_ROLES[n]})` : ''} | ${t.threads} | ${perMessage(t.cpuMs)} | ${((100 * t.cpuMs) / (processCpu * messages)).toFixed(1)}% |`,
      ),
    '',
    `Main thread's profile over the span: ${a.samples} samples, busy ${round(a.busyUs / 1000)} ms sampled, idle ${round(a.idleUs / 1000)} ms; ` +
      `its CPU time ${round(profiled.mainCpuMs)} ms: every busy sample is scaled by ${round(scale, 3)} to it (the samples measure wall time while busy, ` +
      "the thread may wait for a core meanwhile). Other threads' profiles over the span (workflow threads): " +
      (workflowThreads.map((w) => `${w.file} busy ${round(w.busyMs)} ms sampled`).join('; ') || 'none') +
      '.',
    '',
    ...(without
      ? [
          `Without the profiler the process spent ${plain.row.workerCpuMsPerMessage} ms per message, ${without}× what it spent with it on, ` +
            "its own thread left out: the figures below are the profiled run's; multiply them by that for a run without it " +
            '(the shares stay).',
          '',
        ]
      : []),
    `Flame graph: [${name}.svg](${name}.svg); folded stacks (µs sampled, idle left out): [${name}.folded](${name}.folded)` +
      (folded.share < 1 ? `, its heaviest stacks up to 1 MB: ${(100 * folded.share).toFixed(1)}% of the busy time.` : '.'),
    '',
    '## The main thread',
    '',
    ...reportTables(a, messages, scale),
    '',
    ...workflowThreads.flatMap((w) => [
      `## Thread ${w.file.split('.')[4]} (the workflow thread: batchWorkflow's activations)`,
      '',
      `Sampled wall time while busy, not scaled (its CPU time is not told apart from the other unnamed threads'): an upper bound. ${w.file}, ` +
        `${w.analysis.samples} samples over the span.`,
      '',
      ...reportTables(w.analysis, messages, 1, 15),
      '',
    ]),
  ];
  writeFileSync(path.join(outDir, `${name}.md`), lines.join('\n'));

  const subtitle = `${messages} messages, batches of 500; main thread ${perMessage(profiled.mainCpuMs)} of ${processCpu} ms CPU per message (process, profiler on)`;
  writeFileSync(
    path.join(outDir, `${name}.svg`),
    flameGraphSvg(a, "redeliver worker, main thread: section 6's batch row", subtitle, messages, scale),
  );
  console.log(`wrote bench/results/${name}.md, .svg, .folded (profiles in ${run.profiles})`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
