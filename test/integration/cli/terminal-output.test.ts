import { randomUUID } from 'node:crypto';
import { Attempts, DeliveryKind, DeliveryState, Device, Endpoint, Tenant } from '../../../src/contract';
import { runCli } from '../../support/cli';
import { startReceiver, type Receiver } from '../../support/receiver';
import { startHarness, testAddress, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

/** Sets the terminal's title, rings its bell and clears its screen, if printed as is. */
const HOSTILE = '\x1b]0;pwned\x07\x1b[2J';
const ESCAPED = '\\x1b]0;pwned\\x07\\x1b[2J';
/** A byte a terminal acts on (C0 and C1 controls, DEL, bidi overrides); newlines are the output's own. */
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

const env = {} as { h: Harness; receiver: Receiver };
beforeAll(async () => {
  [env.h, env.receiver] = await Promise.all([startHarness(), startReceiver()]);
  env.receiver.route('/hostile-wait', () => ({ status: 500, body: HOSTILE }));
  env.receiver.route('/hostile-reject', () => ({ status: 400, body: HOSTILE }));
});
afterAll(async () => {
  await env.h?.stop();
  await env.receiver?.close();
});
const conn = () => ['--address', testAddress(), '--task-queue', env.h.taskQueue];

test('status, list and dead-letters show print what endpoints and ids say with its control characters escaped', async () => {
  const tenant = `term-${randomUUID().slice(0, 8)}`;
  const target = (path: string) => `${env.receiver.url}${path}`;
  const waiting = await env.h.redeliver.submit({
    kind: 'event',
    tenant,
    device: 'd1',
    payload: 1,
    target: target('/hostile-wait'),
    policy: { jitter: 'none', initial: '10m', min: '10m', max: '10m' },
  });
  const rejected = await env.h.redeliver.submit({
    kind: 'event',
    tenant,
    device: 'd2',
    payload: `body ${HOSTILE}`,
    target: target('/hostile-reject'),
  });
  expect((await rejected.result()).outcome).toBe('rejected');
  await waitFor(
    () => waiting.status(),
    (s) => s.state === 'waiting',
    10_000,
    'the first wait',
  );
  // an id from outside submit's checks: a delivery a client started on Temporal directly
  const delivery = env.h.redeliver.validate({ kind: 'event', tenant, device: 'd3', payload: 1, target: target('/ok') });
  await env.h.client.workflow.start('deliveryWorkflow', {
    taskQueue: env.h.taskQueue,
    workflowId: `delivery/${tenant}/d3/${HOSTILE}`,
    args: [{ delivery }],
    typedSearchAttributes: [
      { key: DeliveryKind, value: 'event' },
      { key: DeliveryState, value: 'pending' },
      { key: Endpoint, value: delivery.endpoint },
      { key: Tenant, value: tenant },
      { key: Device, value: 'd3' },
      { key: Attempts, value: 0 },
    ],
  });
  await waitFor(
    () => env.h.redeliver.count({ tenant }),
    (n) => n === 3,
    10_000,
    'three deliveries listed',
  );

  const runs = {
    status: await runCli(['status', waiting.deliveryId, ...conn()]),
    list: await runCli(['list', '--tenant', tenant, ...conn()]),
    show: await runCli(['dead-letters', 'show', rejected.deliveryId, ...conn()]),
  };
  for (const [command, run] of Object.entries(runs)) {
    expect({ command, code: run.code, stderr: run.stderr }).toEqual({ command, code: 0, stderr: '' });
    expect({ command, raw: RAW_CONTROL.exec(run.stdout)?.[0] }).toEqual({ command, raw: undefined });
    expect(run.stdout).toContain(ESCAPED);
  }
  // JSON was safe already: JSON.stringify escapes control characters
  const json = await runCli(['status', waiting.deliveryId, '--json', ...conn()]);
  expect(json.stdout).not.toMatch(RAW_CONTROL);
  expect((JSON.parse(json.stdout) as { lastError: { reason: string } }).lastError.reason).toContain(HOSTILE);
});
