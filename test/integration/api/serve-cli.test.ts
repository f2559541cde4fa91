import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CLI } from '../../support/cli';
import { useHarnessAndReceiver } from '../../support/setup';
import { testAddress } from '../../support/temporal';

// `redeliver serve` as a user runs it: the built CLI, its keys from a file, driven by a client nobody here wrote.
const env = useHarnessAndReceiver();
const KEY = `key-${randomUUID()}`;
const TENANT = `t-${randomUUID().slice(0, 8)}`;

/** Starts `redeliver serve --port 0` and resolves with its URL, once it says it listens. */
async function serve(): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'serve-'));
  const keysFile = path.join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([{ key: KEY, tenants: [TENANT], roles: ['produce', 'operate', 'read'] }]));
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
    env: { ...process.env, REDELIVER_API_KEYS_FILE: keysFile, TEMPORAL_ADDRESS: testAddress(), REDELIVER_TASK_QUEUE: env.h.taskQueue },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /redeliver API at (\S+) /.exec(stderr);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

test('Python end to end: submit, status until a dead letter, redrive, status until delivered', async () => {
  const { child, url } = await serve();
  try {
    env.receiver.route('/python', ({ nth }) => ({ status: nth === 1 ? 400 : 202 }));
    const script = path.join(__dirname, 'e2e.py');
    const { stdout } = await promisify(execFile)('python3', [script, url, KEY, TENANT, `${env.receiver.url}/python`], { timeout: 90_000 });
    expect(JSON.parse(stdout)).toEqual({
      deliveryId: expect.stringMatching(`^delivery/${TENANT}/python/`),
      first: 'http-400',
      then: 'delivered',
    });
  } finally {
    child.kill('SIGTERM');
  }
});

test('SIGTERM: new connections are refused, a request in flight is finished, the process exits 0', async () => {
  const { child, url, stderr } = await serve();
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ kind: 'event', tenant: TENANT, device: 'd', target: `${env.receiver.url}/in`, payload: 'in flight' });
  const headers = {
    authorization: `Bearer ${KEY}`,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    // the server's 100 Continue says it has the request: it is in flight when SIGTERM comes, its body still to send
    expect: '100-continue',
  };
  const req = request({ hostname, port, method: 'POST', path: '/v1/deliveries', headers });
  const answer = new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
    req.once('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    });
    req.once('error', reject);
  });
  req.flushHeaders();
  await new Promise<void>((resolve) => req.once('continue', resolve));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  while (await accepts(hostname, Number(port))) await new Promise((r) => setTimeout(r, 20));
  req.end(body);
  const { status, body: text } = await answer;
  expect(status).toBe(202);
  expect(JSON.parse(text).deliveryId).toMatch(`delivery/${TENANT}/d/`);
  expect(await exited).toBe(0);
  expect(stderr()).toContain('stopping: no new requests; finishing those in flight');
});

/** Whether a new connection is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
