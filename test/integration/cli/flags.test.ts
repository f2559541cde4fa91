import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../../support/cli';

// nothing listens there: a flag refused before connecting is refused at once, one that is not would fail (exit 3)
const NOWHERE = ['--address', '127.0.0.1:1'];

test.each([
  ['list', '--limit', 'abc'],
  ['list', '--limit', '0'],
  ['list', '--limit', '2.5'],
  ['dead-letters', '--limit', 'lots'],
  ['redrive', '--all', '--concurrency', 'x'],
  ['watch', '--interval', 'abc'],
  ['worker', '--concurrency', '-1'],
  ['dev', '--port', '99999'],
  ['dev', '--ui-port', 'abc'],
  ['schedule', '--draws', 'abc'],
  ['simulate', '--clients', '1e2'],
])('%s %s %s: exit 2 naming the flag', async (...args: string[]) => {
  const flag = args[args.length - 2]!;
  const run = await runCli([...args, ...(['schedule', 'simulate', 'dev'].includes(args[0]!) ? [] : NOWHERE)]);
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
  expect(run.stderr).toContain(`${flag}: must be a whole number`);
});

test.each(['--deadline 2030-01-01T00:00:00Z', '--request-id r-1', '--status 204'])(
  'submit --kind event %s: exit 2, the flag is for command responses',
  async (flag) => {
    const run = await runCli([
      'submit',
      '--kind',
      'event',
      '--tenant',
      'acme',
      '--device',
      'd',
      '--target',
      'http://127.0.0.1:1/x',
      ...flag.split(' '),
      ...NOWHERE,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${flag.split(' ')[0]}: is for command responses (--kind command-response), not event`);
  },
);

test('submit with a bad field: exit 2 naming it before connecting to anything (one, and a file of many)', async () => {
  const one = await runCli([
    'submit',
    '--kind',
    'event',
    '--tenant',
    'acme',
    '--device',
    'd\u0007',
    '--target',
    'http://127.0.0.1:1/x',
    ...NOWHERE,
  ]);
  expect({ code: one.code, stdout: one.stdout }).toEqual({ code: 2, stdout: '' });
  expect(one.stderr).toContain('device');
  const input = {
    kind: 'event',
    tenant: 'acme',
    device: 'd',
    target: { url: 'http://127.0.0.1:1/x', headers: { 'Transfer-Encoding': 'chunked' } },
  };
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-flags-')), 'deliveries.ndjson');
  writeFileSync(file, `${JSON.stringify({ ...input, device: 'ok' })}\n${JSON.stringify(input)}\n`);
  const many = await runCli(['submit', '--file', file, ...NOWHERE]);
  expect({ code: many.code, stdout: many.stdout }).toEqual({ code: 2, stdout: '' });
  expect(many.stderr).toContain('[1].target.headers');
});

describe('submit --file: batch flags refused before connecting, naming the flag', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-flags-')), 'one.ndjson');
  beforeAll(() =>
    writeFileSync(file, JSON.stringify({ kind: 'event', tenant: 'acme', device: 'd', target: 'http://127.0.0.1:1/x', payload: {} })),
  );

  test.each([
    [['--batch-size', '0'], '--batch-size: must be a whole number from 1 to 1000'],
    [['--batch-size', '1001'], '--batch-size: must be a whole number from 1 to 1000'],
    [['--batch-id', 'a/b'], '--batch-id: must not contain whitespace'],
    [['--no-batch', '--batch-id', 'b-1'], '--batch-id: is for batches, not --no-batch'],
  ])('%j', async (flags, message) => {
    const run = await runCli(['submit', '--file', file, ...flags, ...NOWHERE]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
    expect(run.stderr).toContain(message);
  });

  test('a batch flag on a single submit', async () => {
    const single = '--kind event --tenant a --device d --target http://127.0.0.1:1/x'.split(' ');
    const run = await runCli(['submit', ...single, '--batch-size', '5', ...NOWHERE]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
    expect(run.stderr).toContain('--batch-size: is for a bulk submit (--file)');
  });

  test('a message id used twice in the file for different messages', async () => {
    const twice = path.join(path.dirname(file), 'twice.ndjson');
    const input = { kind: 'event', tenant: 'acme', device: 'd', messageId: 'm-1', target: 'http://127.0.0.1:1/x', payload: { n: 1 } };
    writeFileSync(twice, `${JSON.stringify(input)}\n${JSON.stringify({ ...input, payload: { n: 2 } })}\n`);
    const run = await runCli(['submit', '--file', twice, ...NOWHERE]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
    expect(run.stderr).toContain('[1].messageId: m-1 is used earlier');
  });
});

test.each([
  [['--max-in-flight', 'many'], '--max-in-flight: must be a whole number from 1 to 100000'],
  [['--rate', '5/day'], '--rate: must be attempts per second above 0'],
  [['--auto-disable-after', '10s'], '--auto-disable-after: must be a duration from 1m to 90d'],
  [['--priority', 'urgent'], '--priority: must be "deadline-first", "fifo", or null for the default; got "urgent"'],
  [['--outage', 'pause'], '--outage: must be "hold", "off", or null for the default; got "pause"'],
  [[], '--max-in-flight: or --rate, --breaker, --probe-every, --auto-disable-after, --priority, --outage: give at least one'],
])('endpoint set %j: exit 2 naming the flag, before connecting', async (flags, message) => {
  const run = await runCli(['endpoint', 'set', 'ingest.example.com', ...flags, ...NOWHERE]);
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
  expect(run.stderr).toContain(message);
});
