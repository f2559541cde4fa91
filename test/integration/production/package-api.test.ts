import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../../src/demo/flaky-endpoint';
import { startHarness, testAddress } from '../../support/temporal';

// The package as an application installs it: a project of its own with `redeliver` in node_modules (a link to
// this checkout, built by `npm test` into lib/), importing the entry points package.json exports.

const ROOT = path.join(__dirname, '..', '..', '..');
const APP = mkdtempSync(path.join(tmpdir(), 'redeliver-app-'));
// an empty HOME: no ~/.config/temporalio/temporal.toml of the machine's reaches the application
const HOME = mkdtempSync(path.join(tmpdir(), 'redeliver-app-home-'));

/** Type-checks each entry point's typical use, and that an internal module is no import at all. */
const CONSUMER = `
import { DeliveryControlError, InvalidInputError, Redeliver, RedeliverError, type DeliveryInput, type RefusalKind } from 'redeliver';
import { createWorker, runWorker, installRuntime, type RedeliverWorkerOptions } from 'redeliver/worker';
import { defaultPolicy, nextDelay, validatePolicy } from 'redeliver/policy';
import { classify } from 'redeliver/classify';
// @ts-expect-error internals are not part of the package's API
import type { Activities } from 'redeliver/lib/activities';

const refusedBecausePaused = (err: unknown) => err instanceof DeliveryControlError && err.kind === 'AlreadyPaused';
// @ts-expect-error a kind that does not exist is a type error, not a silent false
const misspelt = (err: DeliveryControlError) => err.kind === 'AlreadyPausd';
const kind: RefusalKind = 'NotWaiting';
const input: DeliveryInput = { kind: 'event', tenant: 'acme', device: 'd1', target: 'https://example.com/in', payload: {} };
const options: RedeliverWorkerOptions = { taskQueue: 'q', allowAddresses: ['loopback'] };
const policy = defaultPolicy('event');
const decision = nextDelay(policy, { attempts: 1, previousDelay: 0, firstAttemptAt: 0, now: 0 }, () => 0);
const internal = (name: string) => {
  try {
    require.resolve(name);
    return 'importable';
  } catch (err) {
    return (err as { code?: string }).code;
  }
};
// one error class across entry points: the policy's refusal is the client's InvalidInputError
let validation: unknown;
try {
  validatePolicy({ max: 'soon' }, { kind: input.kind });
} catch (err) {
  validation = err instanceof InvalidInputError && err instanceof RedeliverError ? err.problems.map((p) => p.field) : String(err);
}
console.log(JSON.stringify({
  client: typeof Redeliver.connect,
  worker: [typeof createWorker, typeof runWorker, typeof installRuntime],
  policy: policy.jitter,
  retry: decision.retry,
  classify: classify({ kind: 'http', status: 503 }).class,
  internal: internal('redeliver/lib/activities'),
  compiledWorker: internal('redeliver/lib/worker.js'),
  validation,
  unused: [refusedBecausePaused, misspelt, kind, options, undefined as Activities | undefined].length,
}));
`;

/** A library user: connects as the environment says, submits, and says where to. */
const PRODUCER = `
const { Redeliver } = require('redeliver');
(async () => {
  const redeliver = await Redeliver.connect();
  const handle = await redeliver.submit({ kind: 'event', tenant: 'acme', device: 'd1', target: process.argv[2], payload: { n: 1 } });
  console.log(JSON.stringify({ deliveryId: handle.deliveryId, taskQueue: redeliver.taskQueue }));
  await redeliver.close();
})().catch((err) => { console.error(err); process.exit(1); });
`;

beforeAll(() => {
  mkdirSync(path.join(APP, 'node_modules'));
  symlinkSync(ROOT, path.join(APP, 'node_modules', 'redeliver'), 'dir');
  writeFileSync(path.join(APP, 'package.json'), JSON.stringify({ name: 'an-application', private: true, type: 'commonjs' }));
  const compilerOptions = {
    module: 'node16',
    moduleResolution: 'node16',
    target: 'ES2022',
    strict: true,
    skipLibCheck: true,
    outDir: 'out',
    types: ['node'],
    typeRoots: [path.join(ROOT, 'node_modules', '@types')],
  };
  writeFileSync(path.join(APP, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }));
  writeFileSync(path.join(APP, 'consumer.ts'), CONSUMER);
  writeFileSync(path.join(APP, 'producer.js'), PRODUCER);
});

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // the application's own environment: nothing of the test run's (REDELIVER_TEST_*, a developer's TEMPORAL_*)
    const appEnv = { PATH: process.env.PATH, HOME, ...env };
    const child = spawn(process.execPath, args, { cwd: APP, env: appEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('each entry point type-checks and runs from the built package; an internal module is not importable', async () => {
  const compiled = await run([path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', APP]);
  expect(compiled.stdout + compiled.stderr).toBe('');
  expect(compiled.code).toBe(0);

  const ran = await run([path.join(APP, 'out', 'consumer.js')]);
  expect(ran.stderr).toBe('');
  expect(JSON.parse(ran.stdout)).toEqual({
    client: 'function',
    worker: ['function', 'function', 'function'],
    policy: 'full',
    retry: true,
    classify: 'server',
    internal: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    compiledWorker: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    validation: ['max'],
    unused: 5,
  });
}, 120_000);

describe('a library user with REDELIVER_TASK_QUEUE set', () => {
  const taskQueue = `library-user-${randomUUID()}`;
  let endpoint: FlakyEndpoint;
  let h: Awaited<ReturnType<typeof startHarness>>;
  beforeAll(async () => {
    [h, endpoint] = await Promise.all([startHarness(testAddress(), { taskQueue }), startFlakyEndpoint()]);
  });
  afterAll(async () => {
    await h?.stop();
    await endpoint?.close();
  });

  test('submits to that queue with Redeliver.connect(): a worker polling it delivers', async () => {
    const submitted = await run([path.join(APP, 'producer.js'), `${endpoint.url}/library-user`], {
      TEMPORAL_ADDRESS: testAddress(),
      REDELIVER_TASK_QUEUE: taskQueue,
    });
    expect(submitted.stderr).toBe('');
    const { deliveryId, taskQueue: used } = JSON.parse(submitted.stdout) as { deliveryId: string; taskQueue: string };
    expect(used).toBe(taskQueue);
    const handle = h.redeliver.getHandle(deliveryId);
    expect((await handle.workflow.describe()).taskQueue).toBe(taskQueue);
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
    expect(endpoint.received.filter((r) => r.path === '/library-user')).toHaveLength(1);
  }, 60_000);
});
