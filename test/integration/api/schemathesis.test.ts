import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redeliver } from '../../../src/client/index';
import { ensureSchemathesis } from '../../../src/dev/schemathesis';
import { startApi, type TestApi } from '../../support/api';
import { useStubbedWorker } from '../../support/stubbed-worker';

// schemathesis, a client nobody here wrote, generates requests from /openapi.json (valid ones, and ones the
// schema refuses) and checks every answer against the document. Bounded: a fixed number of examples per
// operation, a fixed seed, and a time limit; the first run also installs it from PyPI (about 90 s).
jest.setTimeout(10 * 60_000);

const KEY = `key-${randomUUID()}`;
let api: TestApi;
// a worker whose only activity announces operational events (to no operator URL): the workflows run (an endpoint's
// answers the changes made to it; a disable's event is announced), no attempt is ever made, so what schemathesis
// manages to submit is started and waits, nothing is sent
const worker = useStubbedWorker({ announceEvents: async () => [] });

beforeAll(async () => {
  const redeliver = new Redeliver(worker.client, { taskQueue: worker.taskQueue });
  // an endpoint change waits for the one stubbed worker as long as schemathesis waits for an answer (its
  // --request-timeout): the fuzzer opens an endpoint workflow per new name, and on a loaded run a new one's first
  // task came after the API's 10 s (1 of 2 fresh-clone runs), so its answer was the 503 a missing worker gets
  api = await startApi(
    redeliver,
    [{ key: KEY, tenants: ['*'], roles: ['produce', 'operate', 'read'] }],
    {},
    { endpointChangeWaitMs: 30_000 },
  );
});
afterAll(async () => {
  await api?.close();
});

test('schemathesis finds no 5xx and no answer that breaks the OpenAPI document', async () => {
  const schemathesis = await ensureSchemathesis((line) => process.stderr.write(`${line}\n`));
  const args = [
    'run',
    `${api.url}/openapi.json`,
    '--header',
    `Authorization: Bearer ${KEY}`,
    '--checks',
    'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance',
    '--max-examples',
    '15',
    '--seed',
    '18',
    '--max-time',
    '100',
    '--request-timeout',
    '30',
    // one: CPython 3.11's parser is not safe in threads (hypothesis describes its filters by parsing their source)
    '--workers',
    '1',
    '--no-color',
  ];
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    // its own files (hypothesis' example database, its cache) go to a folder of the run, not the project's
    const child = spawn(schemathesis, args, { cwd: mkdtempSync(path.join(tmpdir(), 'schemathesis-')), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
  if (code !== 0) process.stderr.write(output);
  else
    process.stderr.write(
      `${output
        .split('\n')
        .filter((l) => /generated|passed|Tested|Seed|Stateful|API Links/.test(l))
        .join('\n')}\n`,
    );
  expect(code).toBe(0);
  // it did test the operations: each route was called
  expect(output).toMatch(/\d+ passed/);
  // its stateful phase chained operations by the document's links (a listing to its items' reads and controls, …)
  expect(Number(/API Links:\s+(\d+) covered/.exec(output)?.[1] ?? 0)).toBeGreaterThan(0);
  const requests = api.log.length;
  expect(requests).toBeGreaterThan(200);
});
