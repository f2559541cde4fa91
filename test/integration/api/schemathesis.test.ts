import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redeliver } from '../../../src/client/index';
import { ROUTES } from '../../../src/api/routes';
import { EXAMPLE_IDS } from '../../../src/api/schemas';
import { ensureSchemathesis } from '../../../src/dev/schemathesis';
import { startApi, type TestApi } from '../../support/api';
import { BAD_REQUEST, ScriptedDeliveries, UNAVAILABLE } from '../../support/stub-activities';
import { useStubbedWorker } from '../../support/stubbed-worker';
import { waitFor } from '../../support/wait';

// schemathesis, a client nobody here wrote, generates requests from /openapi.json (valid ones, and ones the
// schema refuses) and checks every answer against the document. Bounded: a fixed number of examples per
// operation, a fixed seed, and time limits; the first run also installs it from PyPI (about 90 s).
jest.setTimeout(10 * 60_000);

const KEY = `key-${randomUUID()}`;
let api: TestApi;
// the deliveries' activities scripted, nothing sent: every delivery fails its first attempt (503) and then waits an
// hour on the server, so that its controls (pause, resume, retry now, cancel) act on a waiting delivery; the dead
// letters the API reference's examples name are rejected at once. Besides, operational events are announced to no
// operator URL: the workflows run (an endpoint's answers the changes made to it; a disable's event is announced).
const deliveries = new ScriptedDeliveries({ send: [UNAVAILABLE] });
const idParts = (id: string) => id.split('/') as [string, string, string, string];
const DEAD_LETTERS = [EXAMPLE_IDS.getDeadLetter, EXAMPLE_IDS.redrive];
for (const id of DEAD_LETTERS) deliveries.script(idParts(id)[3], { send: [BAD_REQUEST] });
const worker = useStubbedWorker({ ...deliveries.activities(), announceEvents: async () => [] });

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
  // what the document's examples name exists: waiting deliveries, a paused one, dead letters, a subscription
  const { getDelivery, retryNowDelivery, pauseDelivery, resumeDelivery, cancelDelivery } = EXAMPLE_IDS;
  for (const id of [getDelivery, retryNowDelivery, pauseDelivery, resumeDelivery, cancelDelivery, ...DEAD_LETTERS]) {
    const [, tenant, device, messageId] = idParts(id);
    const event = { kind: 'event', tenant, device, messageId, target: 'http://127.0.0.1:9/x', payload: {} };
    expect((await api.call('POST', '/v1/deliveries', KEY, event)).status).toBe(202);
  }
  for (const id of DEAD_LETTERS) expect((await redeliver.getHandle(id).result()).outcome).toBe('rejected');
  for (const id of [getDelivery, retryNowDelivery, pauseDelivery, resumeDelivery, cancelDelivery])
    await waitFor(
      () => redeliver.getHandle(id).status(),
      (status) => status.state === 'waiting',
      15_000,
      `${id} waiting`,
    );
  await redeliver.getHandle(resumeDelivery).pause('paused for the example of resume');
  const [, tenant, device] = EXAMPLE_IDS.subscription.split('/');
  const subscription = { tenant, device, broker: 'mqtt://127.0.0.1:9', callback: 'http://127.0.0.1:9/commands' };
  expect((await api.call('POST', '/v1/subscriptions', KEY, subscription)).json).toMatchObject({ subscriptionId: EXAMPLE_IDS.subscription });
});
afterAll(async () => {
  await api?.close();
});

/** One run of schemathesis against the API's document with the test's key: its exit code and what it printed. */
async function schemathesis(phases: string, maxSeconds: number): Promise<{ code: number | null; output: string }> {
  const command = await ensureSchemathesis((line) => process.stderr.write(`${line}\n`));
  const args = [
    'run',
    `${api.url}/openapi.json`,
    '--header',
    `Authorization: Bearer ${KEY}`,
    '--checks',
    'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance',
    '--phases',
    phases,
    '--max-examples',
    '15',
    '--seed',
    '18',
    '--max-time',
    String(maxSeconds),
    '--request-timeout',
    '30',
    // one: CPython 3.11's parser is not safe in threads (hypothesis describes its filters by parsing their source)
    '--workers',
    '1',
    '--no-color',
  ];
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    // its own files (hypothesis' example database, its cache) go to a folder of the run, not the project's
    const child = spawn(command, args, { cwd: mkdtempSync(path.join(tmpdir(), 'schemathesis-')), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
  const summary = /Examples|Coverage|Fuzzing|Stateful|generated|passed|Tested|Seed|API Links|Warnings|⚠️/;
  process.stderr.write(
    code === 0
      ? `${output
          .split('\n')
          .filter((l) => summary.test(l))
          .join('\n')}\n`
      : output,
  );
  return { code, output };
}

/** The operation of each request the API served, by its route (`POST /v1/deliveries/{deliveryId}/pause`), and its statuses. */
function statusesByOperation(): Map<string, number[]> {
  const routes = ROUTES.map((r) => ({
    name: `${r.method} ${r.path}`,
    method: r.method,
    pattern: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  const seen = new Map<string, number[]>(routes.map((r) => [r.name, []]));
  for (const entry of api.log) {
    const route = routes.find((r) => r.method === entry.method && r.pattern.test(entry.url.split('?')[0]!));
    if (route) seen.get(route.name)!.push(entry.status);
  }
  return seen;
}

test('schemathesis finds no 5xx and no answer that breaks the OpenAPI document; every operation reaches its logic', async () => {
  // generated requests, valid and not, for each operation on its own: first each operation's examples and the
  // cases that cover its schema, to their end (about 3 minutes here, 2,366 cases; the limit is a guard)
  const covered = await schemathesis('examples,coverage', 300);
  expect(covered.code).toBe(0);
  expect(covered.output).toMatch(/\d+ passed/);
  // no operation answered those valid requests with 400s only: the document says what validation accepts
  expect(covered.output).not.toMatch(/Schema validation mismatch/);
  // then random ones for a minute, checked alike. Not for the share validation accepts: the time limit cuts the
  // last operation short, and a few random valid cases may all be refused by design (RFC 3986 URIs such as
  // mqtt://[94C20]/ that the WHATWG URL parser, and so the API, refuses): that warning came and went between runs
  const fuzzed = await schemathesis('fuzzing', 60);
  expect(fuzzed.code).toBe(0);
  expect(fuzzed.output).toMatch(/\d+ passed/);

  // then chains of operations, each taking what the one before answered by the document's links: a submit to its
  // delivery's read and controls, a listing to its items', a pause to the resume
  const chained = await schemathesis('stateful', 60);
  expect(chained.code).toBe(0);
  expect(Number(/API Links:\s+(\d+) covered/.exec(chained.output)?.[1] ?? 0)).toBeGreaterThan(0);

  // every operation reached its logic: each answered at least one request with a 2xx
  const unserved = [...statusesByOperation()].filter(([, statuses]) => !statuses.some((s) => s >= 200 && s < 300)).map(([op]) => op);
  expect(unserved).toEqual([]);
});
