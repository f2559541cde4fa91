import { randomUUID } from 'node:crypto';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { Redeliver } from '../../../src/client/index';
import type { DeliveryInput } from '../../../src/delivery/types';
import { runCli } from '../../support/cli';
import { useHarnessAndEndpoint } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor, waitForProgress } from '../../support/wait';

const env = useHarnessAndEndpoint();

const tenantOf = () => `t-${randomUUID().slice(0, 8)}`;
const collect = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

test('dead letters are listed by filter and shown with their message and last error', async () => {
  const tenant = tenantOf();
  const base = { tenant, payload: { v: 1 } };
  const inputs: DeliveryInput[] = [
    { ...base, kind: 'event', device: 'd1', messageId: 'rejected', target: `${env.endpoint.url}/dl?fail=9&status=403` },
    {
      ...base,
      kind: 'event',
      device: 'd2',
      messageId: 'exhausted',
      target: `${env.endpoint.url}/dl?fail=9&status=500`,
      policy: { maxAttempts: 2 },
    },
    { ...base, kind: 'telemetry', qos: 0, device: 'd3', messageId: 'dropped', target: `${env.endpoint.url}/dl?fail=9&status=503` },
    { ...base, kind: 'event', device: 'd4', messageId: 'delivered', target: `${env.endpoint.url}/dl` },
  ];
  const handles = await env.h.redeliver.submitMany(inputs);
  await Promise.all(handles.map((x) => x.result()));

  const all = await waitFor(
    () => collect(env.h.redeliver.deadLetters({ tenant })),
    (rows) => rows.length === 3,
    10_000,
    'three dead letters',
  );
  expect(all.map((r) => r.state).sort()).toEqual(['dropped', 'exhausted', 'rejected']);
  expect((await collect(env.h.redeliver.deadLetters({ tenant, errorClass: 'client' }))).map((r) => r.device)).toEqual(['d1']);
  expect((await collect(env.h.redeliver.deadLetters({ tenant, kind: 'telemetry' }))).map((r) => r.device)).toEqual(['d3']);
  expect(await collect(env.h.redeliver.deadLetters({ tenant, endpoint: new URL(env.endpoint.url).host, state: 'exhausted' }))).toHaveLength(
    1,
  );
  expect(await collect(env.h.redeliver.deadLetters({ tenant, since: new Date(Date.now() + 60_000) }))).toHaveLength(0);

  const shown = await runCli([
    'dead-letters',
    'show',
    handles[1]!.deliveryId,
    '--json',
    '--address',
    testAddress(),
    '--task-queue',
    env.h.taskQueue,
  ]);
  expect(shown.code).toBe(0);
  const letter = JSON.parse(shown.stdout);
  expect(letter).toMatchObject({
    outcome: 'exhausted',
    attempts: 2,
    lastError: { class: 'server', code: 'http-500' },
    message: { body: '{"v":1}', tenant, device: 'd2' },
  });
  expect(Date.parse(letter.lastAttemptAt)).toBeGreaterThanOrEqual(Date.parse(letter.firstAttemptAt));
});

test('redrive starts a new run of the same delivery id, which delivers the kept message', async () => {
  const input: DeliveryInput = {
    kind: 'event',
    tenant: tenantOf(),
    device: 'd',
    messageId: randomUUID(),
    payload: 'hello',
    target: `${env.endpoint.url}/redrive?fail=1&status=400`,
  };
  const first = await env.h.redeliver.submit(input);
  expect((await first.result()).outcome).toBe('rejected');
  const firstRun = (await first.workflow.describe()).runId;

  const again = await env.h.redeliver.redrive(first.deliveryId);
  expect(again.created).toBe(true);
  expect(await again.result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  const runs = await collect(env.h.client.workflow.list({ query: `WorkflowId = '${first.deliveryId}'` }));
  expect(runs).toHaveLength(2);
  expect((await again.workflow.describe()).memo).toMatchObject({ redriveOf: firstRun });
  expect(env.endpoint.received.filter((r) => r.messageId === input.messageId).map((r) => [r.status, r.body])).toEqual([
    [400, 'hello'],
    [202, 'hello'],
  ]);

  await expect(env.h.redeliver.redrive(first.deliveryId)).rejects.toThrow(/only dead letters can be redriven; this delivery is delivered/);
});

test('bulk redrive of 1,000 dead letters from the CLI, with a progress bar', async () => {
  const tenant = tenantOf();
  const inputs: DeliveryInput[] = Array.from({ length: 1000 }, (_, i) => ({
    kind: 'event',
    tenant,
    device: `d${i % 10}`,
    messageId: `m${i}`,
    payload: { i },
    target: `${env.endpoint.url}/bulk?fail=1&status=422`,
  }));
  // how long each stage took, printed: the test's verdict is in the counts, its time is the machine's load
  const started = Date.now();
  const stages: Record<string, number> = {};
  const lap = (stage: string) => (stages[stage] = Math.round((Date.now() - started) / 1000));
  const handles = await env.h.redeliver.submitMany(inputs, undefined, 32);
  lap('submitted');
  await Promise.all(handles.map((x) => x.result()));
  lap('rejected');
  await waitFor(
    () => env.h.redeliver.count({ tenant, state: 'rejected' }),
    (n) => n === 1000,
    30_000,
    '1,000 dead letters',
  );

  const run = await runCli([
    'redrive',
    '--all',
    '--tenant',
    tenant,
    '--concurrency',
    '32',
    '--address',
    testAddress(),
    '--task-queue',
    env.h.taskQueue,
  ]);
  lap('redriven');
  expect(run.stderr).toContain('redrive: 1000/1000');
  expect(run.stdout.trim()).toBe('redriven 1000, already redriven 0, failed 0');
  expect(run.code).toBe(0);
  // all of them, at the machine's pace: CI, loaded, had 919 after 60 s (alone here they take 21 s), so what fails is a stall
  expect(
    await waitForProgress(() => env.h.redeliver.count({ tenant, state: 'delivered' }), 1000, 30_000, 'redriven deliveries delivered'),
  ).toBe(1000);
  lap('delivered');
  process.stderr.write(`bulk redrive of 1,000 dead letters, seconds from the start: ${JSON.stringify(stages)}\n`);
  const delivered = new Set(env.endpoint.received.filter((r) => r.path === '/bulk' && r.status === 202).map((r) => r.messageId));
  expect(delivered.size).toBe(1000);
  // measured alone on the 2-core machine: 84 s on 11-23 (submit 12 s, 1,000 rejected 28 s, redrive 23 s, delivered
  // 21 s); 128 s on 11-27 (13, 44, 36, 35 s), and 132 s at that morning's code (so not the day's changes; why it is
  // slower than on 11-23 is not measured). In the full run, beside the cluster's fault tests and the soak on
  // 2 cores, it took 248 s in CI and once over 360 s here: the bound is a guard against a hang, not a speed claim
}, 900_000);

/** Runs of a delivery id (each redrive is one more), as visibility lists them. */
const runsOf = async (deliveryId: string) => (await collect(env.h.client.workflow.list({ query: `WorkflowId = '${deliveryId}'` }))).length;
const sentTo = (path: string, messageId: string) =>
  env.endpoint.received.filter((r) => r.path === path && r.messageId === messageId).map((r) => r.status);

test('a redrive held up until another redrive of the same dead letter has run and ended starts nothing', async () => {
  const input: DeliveryInput = {
    kind: 'event',
    tenant: tenantOf(),
    device: 'd',
    messageId: randomUUID(),
    payload: 'once',
    target: `${env.endpoint.url}/race-one?fail=1&status=400`,
  };
  const letter = await env.h.redeliver.submit(input);
  expect((await letter.result()).outcome).toBe('rejected');

  // the late redrive has read the dead letter; its start waits at this gate until the other's run has ended
  let arrived!: () => void;
  let open!: () => void;
  const atGate = new Promise<void>((resolve) => (arrived = resolve));
  const gate = new Promise<void>((resolve) => (open = resolve));
  const held: WorkflowClientInterceptor = {
    async startWithDetails(startInput, next) {
      arrived();
      await gate;
      return next(startInput);
    },
  };
  const late = new Redeliver(new Client({ connection: env.h.client.connection, interceptors: { workflow: [held] } }), {
    taskQueue: env.h.taskQueue,
  });
  const lateRedrive = late.redrive(letter.deliveryId);
  await atGate;
  const first = await env.h.redeliver.redrive(letter.deliveryId);
  expect(first.created).toBe(true);
  expect(await first.result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  open();

  expect((await lateRedrive).created).toBe(false);
  expect(await runsOf(letter.deliveryId)).toBe(2);
  expect(sentTo('/race-one', input.messageId!)).toEqual([400, 202]);
});

test('concurrent bulk redrives: each dead letter is redriven once, and each call counts only what it did', async () => {
  const tenant = tenantOf();
  const inputs: DeliveryInput[] = Array.from({ length: 12 }, (_, i) => ({
    kind: 'event',
    tenant,
    device: `d${i}`,
    messageId: `race-${randomUUID()}`,
    payload: { i },
    target: `${env.endpoint.url}/race-all?fail=1&status=400`,
  }));
  const letters = await env.h.redeliver.submitMany(inputs);
  await Promise.all(letters.map((x) => x.result()));
  await waitFor(
    () => env.h.redeliver.count({ tenant, state: 'rejected' }),
    (n) => n === inputs.length,
    15_000,
    'the dead letters',
  );

  const totals: number[] = [0, 0, 0];
  const outcomes = await Promise.all(
    totals.map((_, i) => env.h.redeliver.redriveAll({ tenant }, { concurrency: 4, onProgress: (_done, total) => (totals[i] = total) })),
  );
  const ids = letters.map((l) => l.deliveryId).sort();
  expect(outcomes.flatMap((o) => o.redriven).sort()).toEqual(ids);
  for (const [i, o] of outcomes.entries()) {
    expect(o.failed).toEqual([]);
    const handled = [...o.redriven, ...o.alreadyRedriven];
    expect(new Set(handled).size).toBe(handled.length);
    expect(handled.length).toBe(totals[i]);
  }

  await waitFor(
    () => env.h.redeliver.count({ tenant, state: 'delivered' }),
    (n) => n === inputs.length,
    30_000,
    'the redriven deliveries delivered',
  );
  for (const [i, input] of inputs.entries()) {
    expect(sentTo('/race-all', input.messageId!)).toEqual([400, 202]);
    expect(await runsOf(letters[i]!.deliveryId)).toBe(2);
  }
});

test('`redrive --all` twice at once from the CLI: one new run per dead letter, and the printed counts add up', async () => {
  const tenant = tenantOf();
  const inputs: DeliveryInput[] = Array.from({ length: 20 }, (_, i) => ({
    kind: 'event',
    tenant,
    device: `d${i}`,
    messageId: `cli-race-${randomUUID()}`,
    payload: { i },
    target: `${env.endpoint.url}/race-cli?fail=1&status=400`,
  }));
  const letters = await env.h.redeliver.submitMany(inputs);
  await Promise.all(letters.map((x) => x.result()));
  await waitFor(
    () => env.h.redeliver.count({ tenant, state: 'rejected' }),
    (n) => n === inputs.length,
    15_000,
    'the dead letters',
  );

  const args = ['redrive', '--all', '--tenant', tenant, '--concurrency', '4', '--address', testAddress(), '--task-queue', env.h.taskQueue];
  const runs = await Promise.all([runCli(args), runCli(args)]);
  let created = 0;
  for (const run of runs) {
    expect(run.code).toBe(0);
    const counts = /^redriven (\d+), already redriven (\d+), failed 0$/.exec(run.stdout.trim());
    expect(counts).not.toBeNull();
    const listed = /redrive: (\d+)\/(\d+)/.exec(run.stderr);
    expect(Number(counts![1]) + Number(counts![2])).toBe(Number(listed![2]));
    created += Number(counts![1]);
  }
  expect(created).toBe(inputs.length);

  await waitFor(
    () => env.h.redeliver.count({ tenant, state: 'delivered' }),
    (n) => n === inputs.length,
    30_000,
    'the redriven deliveries delivered',
  );
  for (const [i, input] of inputs.entries()) {
    expect(sentTo('/race-cli', input.messageId!)).toEqual([400, 202]);
    expect(await runsOf(letters[i]!.deliveryId)).toBe(2);
  }
});
