import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureOpenApiPythonClient } from '../../../src/dev/schemathesis';
import { startApi, type TestApi } from '../../support/api';
import { useHarnessAndReceiver } from '../../support/setup';

// A client in another language, generated from the server's own /openapi.json by a generator nobody here wrote
// (openapi-python-client, from PyPI), submits, reads and redrives for real: the document says enough to be used.
jest.setTimeout(10 * 60_000);
const run = promisify(execFile);

const env = useHarnessAndReceiver();
const TENANT = `py-${randomUUID().slice(0, 8)}`;
const KEY = `key-py-${randomUUID()}`;
let api: TestApi;

beforeAll(async () => {
  api = await startApi(env.h.redeliver, [{ key: KEY, tenants: [TENANT], roles: ['produce', 'operate', 'read'] }]);
});
afterAll(() => api?.close());

test('a Python client generated from /openapi.json submits, reads and redrives', async () => {
  const venv = await ensureOpenApiPythonClient((line) => process.stderr.write(`${line}\n`));
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-python-client-'));
  const document = await fetch(`${api.url}/openapi.json`).then((r) => r.text());
  writeFileSync(path.join(dir, 'openapi.json'), document);
  // no formatter run after generating (ruff is not installed): the code is used, not read
  writeFileSync(path.join(dir, 'config.yaml'), 'post_hooks: []\n');
  const generator = path.join(venv, 'bin', 'openapi-python-client');
  const generated = await run(
    generator,
    ['generate', '--path', 'openapi.json', '--config', 'config.yaml', '--meta', 'none', '--output-path', 'redeliver_client'],
    { cwd: dir },
  );
  // the document generates without a warning: no operation or model was skipped for a schema the generator could not read
  expect(`${generated.stdout}${generated.stderr}`).not.toMatch(/warning|unable to parse|skipping/i);

  env.receiver.route('/refuse', ({ nth }) => ({ status: nth === 1 ? 400 : 202 }));
  const { stdout } = await run(path.join(venv, 'bin', 'python'), [path.join(__dirname, 'generated_client_check.py')], {
    cwd: dir,
    env: {
      ...process.env,
      PYTHONPATH: dir,
      API: api.url,
      KEY,
      TENANT,
      OK_TARGET: `${env.receiver.url}/ok`,
      REFUSE_TARGET: `${env.receiver.url}/refuse`,
    },
    timeout: 120_000,
  });
  const seen = JSON.parse(stdout.trim().split('\n').at(-1)!);
  expect(seen).toEqual({
    submitted: { deliveryId: `delivery/${TENANT}/py-1/py-ok`, created: true, again: false },
    read: { state: 'delivered', attempts: 1, codes: ['http-202'] },
    deadLetter: { deliveryId: `delivery/${TENANT}/py-1/py-refused`, outcome: 'rejected', code: 'http-400' },
    redriven: { redriven: true, state: 'delivered' },
  });
  // what the receiver got: the message as the Python client sent it, twice for the redriven one
  expect(env.receiver.of('py-ok').map((r) => JSON.parse(r.body))).toEqual([{ from: 'python' }]);
  expect(env.receiver.of('py-refused').map((r) => r.outcome)).toEqual([400, 202]);
});
