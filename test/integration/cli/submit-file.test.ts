import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { DeliveryInput } from '../../../src/delivery/types';
import { runCli } from '../../support/cli';
import { useHarnessAndEndpoint } from '../../support/setup';
import { testAddress } from '../../support/temporal';

const env = useHarnessAndEndpoint();

const conn = () => ['--address', testAddress(), '--task-queue', env.h.taskQueue];
const message = (device: string, route: string): DeliveryInput => ({
  kind: 'event',
  tenant: 'acme',
  device,
  messageId: randomUUID(),
  payload: { route },
  target: `${env.endpoint.url}${route}`,
  policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '200ms' },
});
const requestsOf = (m: DeliveryInput) => env.endpoint.received.filter((r) => r.messageId === m.messageId);
const deliveryIdOf = (m: DeliveryInput) => `delivery/${m.tenant}/${m.device}/${m.messageId}`;

function ndjson(inputs: DeliveryInput[]): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-file-')), 'messages.ndjson');
  writeFileSync(file, inputs.map((i) => JSON.stringify(i)).join('\n'));
  return file;
}

/** Whether a delivery of its own was started for the message (a batch starts one only for a message not delivered at once). */
async function hasOwnWorkflow(m: DeliveryInput): Promise<boolean> {
  try {
    await env.h.client.workflow.getHandle(deliveryIdOf(m)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

interface FileReport {
  messages: number;
  batches: number;
  created: number;
  outcomes?: Record<string, number>;
  notDelivered?: { deliveryId: string; outcome: string; attempts: number }[];
  elapsedMs: number;
  batchWorkflowIds: string[];
  deliveryIds: string[];
}

test('submit --file goes in batches: each message sent once, --wait --json counts outcomes, a refused message exits 1', async () => {
  const device = `file-${randomUUID().slice(0, 8)}`;
  const ok = Array.from({ length: 23 }, () => message(device, '/file-ok'));
  const retried = message(device, '/file-retried?fail=1&status=503');
  const refused = message(device, '/file-refused?fail=99&status=400');
  const inputs = [...ok.slice(0, 10), retried, ...ok.slice(10), refused];
  const batchId = `upload-${randomUUID().slice(0, 8)}`;

  const run = await runCli([
    'submit',
    '--file',
    ndjson(inputs),
    '--batch-id',
    batchId,
    '--batch-size',
    '10',
    '--wait',
    '--json',
    ...conn(),
  ]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(1);
  const report = JSON.parse(run.stdout) as FileReport;
  expect(report).toMatchObject({
    messages: 25,
    batches: 3,
    created: 3,
    outcomes: { delivered: 24, rejected: 1, dropped: 0, exhausted: 0, expired: 0, cancelled: 0 },
    notDelivered: [{ deliveryId: deliveryIdOf(refused), outcome: 'rejected', attempts: 1 }],
    batchWorkflowIds: [1, 2, 3].map((n) => `batch/acme/${batchId}-${n}`),
    deliveryIds: inputs.map(deliveryIdOf),
  });
  expect(report.elapsedMs).toBeGreaterThan(0);

  for (const m of ok) expect(requestsOf(m)).toHaveLength(1);
  expect(requestsOf(retried)).toHaveLength(2);
  expect(requestsOf(refused)).toHaveLength(1);
  // only the two messages not delivered at once became workflows of their own
  expect(await Promise.all(inputs.map(hasOwnWorkflow))).toEqual(inputs.map((m) => m === retried || m === refused));
});

test('the same file submitted again sends nothing: its batch existed', async () => {
  const device = `again-${randomUUID().slice(0, 8)}`;
  const inputs = Array.from({ length: 5 }, () => message(device, '/file-again'));
  const file = ndjson(inputs);
  const first = await runCli(['submit', '--file', file, '--wait', ...conn()]);
  expect(first.stderr).toBe('');
  expect(first.code).toBe(0);
  expect(first.stdout).toMatch(/^submitted 5 messages in 1 batch: 1 new\n {2}batch\/acme\/\S+\noutcomes after [\d.]+ s: 5 delivered\n$/);

  const again = await runCli(['submit', '--file', file, '--wait', '--json', ...conn()]);
  expect(again.code).toBe(0);
  const report = JSON.parse(again.stdout) as FileReport;
  expect(report).toMatchObject({ messages: 5, batches: 1, created: 0, outcomes: { delivered: 5 } });
  expect(first.stdout).toContain(report.batchWorkflowIds[0]);
  const human = await runCli(['submit', '--file', file, ...conn()]);
  expect(human.stdout).toMatch(/^submitted 5 messages in 1 batch: 0 new, 1 submitted before \(nothing of theirs is sent again\)\n/);
  for (const m of inputs) expect(requestsOf(m)).toHaveLength(1);
});

test('a file without message ids submitted twice sends each message once, in batches or one by one', async () => {
  for (const mode of [[], ['--no-batch']]) {
    const route = `/file-unnamed-${randomUUID().slice(0, 8)}`;
    const inputs = Array.from({ length: 30 }, (_, n) => ({ ...message('unnamed', route), messageId: undefined, payload: { n } }));
    const file = ndjson(inputs);
    const runs = [];
    for (const _ of [1, 2]) runs.push(await runCli(['submit', '--file', file, ...mode, '--wait', '--json', ...conn()]));
    expect(runs.map((r) => r.code)).toEqual([0, 0]);
    const [first, again] = runs.map((r) => JSON.parse(r.stdout) as FileReport);
    // the second run names the same deliveries, and starts nothing: no new batch, no new delivery
    expect(again!.deliveryIds).toEqual(first!.deliveryIds);
    expect(again!.created).toBe(0);
    const received = env.endpoint.received.filter((r) => r.path === route);
    expect(received).toHaveLength(30);
    expect(new Set(received.map((r) => r.messageId)).size).toBe(30);
  }
});

test('submit --file --no-batch keeps one workflow per message, and --wait counts their outcomes', async () => {
  const device = `each-${randomUUID().slice(0, 8)}`;
  const inputs = [message(device, '/file-each'), message(device, '/file-each'), message(device, '/file-each?fail=1&status=503')];
  const run = await runCli(['submit', '--file', ndjson(inputs), '--no-batch', '--wait', '--json', ...conn()]);
  expect(run.stderr).toBe('submit: 3/3\n'); // the progress bar, as one line when stderr is not a terminal
  expect(run.code).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({
    messages: 3,
    batches: 0,
    created: 3,
    outcomes: { delivered: 3, rejected: 0 },
    notDelivered: [],
    batchWorkflowIds: [],
    deliveryIds: inputs.map(deliveryIdOf),
  });
  expect(await Promise.all(inputs.map(hasOwnWorkflow))).toEqual([true, true, true]);
  for (const m of inputs) expect(requestsOf(m)).toHaveLength(m === inputs[2] ? 2 : 1);
});
