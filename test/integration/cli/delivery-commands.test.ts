import { randomUUID } from 'node:crypto';
import { runCli } from '../../support/cli';
import { useHarnessAndEndpoint } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const env = useHarnessAndEndpoint();

const conn = () => ['--address', testAddress(), '--task-queue', env.h.taskQueue];

test('submit, status and result from the shell, with stable JSON', async () => {
  const id = randomUUID();
  const submit = await runCli([
    'submit',
    '--kind',
    'telemetry',
    '--tenant',
    'acme',
    '--device',
    'cli-1',
    '--id',
    id,
    '--target',
    `${env.endpoint.url}/cli?fail=1&status=502`,
    '--data',
    '{"t":1}',
    '--json',
    ...conn(),
  ]);
  expect(submit.stderr).toBe('');
  expect(submit.code).toBe(0);
  const submitted = JSON.parse(submit.stdout) as { deliveryId: string; created: boolean };
  expect(submitted).toEqual({ deliveryId: `delivery/acme/cli-1/${id}`, created: true });

  const result = await runCli(['result', submitted.deliveryId, '--json', ...conn()]);
  expect(result.code).toBe(0);
  expect(JSON.parse(result.stdout)).toMatchObject({
    deliveryId: submitted.deliveryId,
    messageId: id,
    outcome: 'delivered',
    attempts: 2,
    lastError: { class: 'server', code: 'http-502' },
  });

  const status = await runCli(['status', submitted.deliveryId, '--json', ...conn()]);
  expect(status.code).toBe(0);
  expect(JSON.parse(status.stdout)).toMatchObject({
    deliveryId: submitted.deliveryId,
    state: 'delivered',
    attempts: 2,
    kind: 'telemetry',
    qos: 1,
    tenant: 'acme',
    device: 'cli-1',
    nextAttemptAt: null,
  });

  const again = await runCli([
    'submit',
    '--kind',
    'telemetry',
    '--tenant',
    'acme',
    '--device',
    'cli-1',
    '--id',
    id,
    '--target',
    `${env.endpoint.url}/cli?fail=1&status=502`,
    '--data',
    '{"t":1}',
    '--json',
    ...conn(),
  ]);
  expect(JSON.parse(again.stdout)).toEqual({ deliveryId: submitted.deliveryId, created: false });
  expect(env.endpoint.received.filter((r) => r.messageId === id)).toHaveLength(2);
});

test('result exits 1 for a dead letter and prints it in words', async () => {
  const id = randomUUID();
  const submit = await runCli([
    'submit',
    '--kind',
    'event',
    '--tenant',
    'acme',
    '--device',
    'cli-2',
    '--id',
    id,
    '--target',
    `${env.endpoint.url}/cli-bad?fail=9&status=404`,
    '--wait',
    ...conn(),
  ]);
  expect(submit.code).toBe(1);
  expect(submit.stdout).toMatch(/rejected after 1 attempt\(s\) — .*HTTP 404/);
});

test('bad input: exit 2, every wrong field named, nothing started', async () => {
  const device = `cli-bad-${randomUUID().slice(0, 8)}`;
  const run = await runCli([
    'submit',
    '--kind',
    'parcel',
    '--qos',
    '2',
    '--tenant',
    'acme',
    '--device',
    device,
    '--target',
    'ftp://x',
    '--max-attempts',
    'lots',
    ...conn(),
  ]);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(/--max-attempts: must be a number, got "lots"/);
  const run2 = await runCli([
    'submit',
    '--kind',
    'parcel',
    '--qos',
    '2',
    '--tenant',
    'acme',
    '--device',
    device,
    '--target',
    'ftp://x',
    ...conn(),
  ]);
  expect(run2.code).toBe(2);
  expect(run2.stderr).toMatch(/kind: must be one of telemetry, event, command-response/);
  expect(run2.stderr).toMatch(/qos: must be 0 or 1/);
  expect(run2.stderr).toMatch(/target: scheme "ftp" is not supported/);
  let count = 0;
  for await (const _ of env.h.client.workflow.list({ query: `Device = '${device}'` })) count++;
  expect(count).toBe(0);
});

test('a bad header (issue 15): exit 2 naming the header, nothing started, nothing sent', async () => {
  const device = `cli-hdr-${randomUUID().slice(0, 8)}`;
  const run = await runCli([
    'submit',
    '--kind',
    'event',
    '--tenant',
    'acme',
    '--device',
    device,
    '--target',
    `${env.endpoint.url}/cli-hdr`,
    '--header',
    'X-Trace: abc',
    '--header',
    'Transfer-Encoding: chunked',
    ...conn(),
  ]);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(/target\.headers\.Transfer-Encoding: is a hop-by-hop framing header/);
  expect(run.stderr).not.toMatch(/X-Trace/);
  let count = 0;
  for await (const _ of env.h.client.workflow.list({ query: `Device = '${device}'` })) count++;
  expect(count).toBe(0);
  expect(env.endpoint.received.filter((r) => r.path.startsWith('/cli-hdr'))).toHaveLength(0);
});

test('every command has --help with an example', async () => {
  for (const command of ['dev', 'worker', 'submit', 'status', 'result']) {
    const run = await runCli([command, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Example/);
  }
});

test('endpoints and downtime: bad flags are refused naming the flag; an endpoint shows once attempts were reported', async () => {
  const badPlot = await runCli(['downtime', '--endpoint', 'x.example.com', '--plot', 'timeline.txt', ...conn()]);
  expect(badPlot.code).toBe(2);
  expect(badPlot.stderr).toMatch(/--plot/);
  const noEndpoint = await runCli(['downtime', '--plot', 'timeline.svg', ...conn()]);
  expect(noEndpoint.code).toBe(2);
  expect(noEndpoint.stderr).toMatch(/--plot.*--endpoint/);
  const badSince = await runCli(['downtime', '--since', 'last tuesday', ...conn()]);
  expect(badSince.code).toBe(2);
  expect(badSince.stderr).toMatch(/--since/);

  // the harness's worker reports the attempts of the test above to the endpoint's workflow
  const host = new URL(env.endpoint.url).host;
  const listed = await waitFor(
    async () =>
      JSON.parse((await runCli(['endpoints', '--json', ...conn()])).stdout) as {
        endpoint: string;
        state: string;
        attemptsLastMinute: number;
      }[],
    (rows) => rows.some((r) => r.endpoint === host && r.attemptsLastMinute > 0),
    20_000,
    'the endpoint in `redeliver endpoints`',
  );
  expect(listed.find((r) => r.endpoint === host)!.state).toMatch(/^(healthy|recovering)$/);
  const table = await runCli(['endpoints', ...conn()]);
  expect(table.stdout).toMatch(/^STATE\s+FAILED\/MIN/);
  expect(table.stdout).toContain(host);
});
