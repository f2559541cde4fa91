import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CLI } from '../../support/cli';
import { freePort } from '../../support/ports';

// The README's first command, as a user runs it (`npm start` = build + `redeliver dev --demo`), on ports of its own.
test('dev --demo starts Temporal with its UI and a worker, and delivers the demo to its end', async () => {
  const [port, uiPort] = [await freePort(), await freePort()];
  const db = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-demo-')), 'dev.db');
  const child = spawn(process.execPath, [CLI, 'dev', '--demo', '--once', '--port', String(port), '--ui-port', String(uiPort), '--db', db], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let uiStatus: number | undefined;
  child.stdout.on('data', (d: Buffer) => {
    const before = stdout;
    stdout += d.toString();
    // the UI is up while the demo runs: ask it for the workflow list page once
    if (!before.includes('flaky demo endpoint') && stdout.includes('flaky demo endpoint')) {
      void fetch(`http://127.0.0.1:${uiPort}/namespaces/default/workflows`).then(
        (r) => (uiStatus = r.status),
        () => (uiStatus = -1),
      );
    }
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

  expect(stderr).toBe('');
  expect(code).toBe(0);
  expect(stdout).toContain(`Temporal UI: http://localhost:${uiPort}/namespaces/default/workflows`);
  expect(uiStatus).toBe(200);
  const outcomes = [...stdout.matchAll(/^ {2}(\w+) +(\d+) attempt\(s\) {2}delivery\/demo\/([\w-]+)\//gm)].map(
    (m) => `${m[3]}:${m[1]}:${m[2]}`,
  );
  expect(outcomes).toEqual([
    'thermostat-1:delivered:3',
    'thermostat-2:dropped:1',
    'door-1:delivered:2',
    'door-2:rejected:1',
    'door-3:exhausted:4',
    'valve-1:delivered:2',
  ]);
  // the worker reported every one of those 13 attempts to the endpoint's workflow
  expect(stdout).toMatch(/^endpoint 127\.0\.0\.1:\d+: (healthy|failing|recovering), 13 attempts in the last minute/m);
  // then a batch of 50 in one workflow: the two messages whose first attempt got a 503 became deliveries of their own
  const batch = /^submitted a batch of 50 telemetry messages in one workflow, (batch\/demo\/telemetry-\d{14})$/m.exec(stdout);
  expect(batch).not.toBeNull();
  expect(stdout).toMatch(/^ {2}first attempts: 48 delivered at once, 2 handed over to deliveries of their own$/m);
  const handedOver = [...stdout.matchAll(/^ {2}handed over: delivery\/demo\/(meter-\d)\/\d{14}-batch-(\d+) (\w+) after (\d+) attempts/gm)];
  expect(handedOver.map((m) => m.slice(1).join(':'))).toEqual(['meter-2:17:delivered:2', 'meter-3:38:delivered:2']);
  expect(stdout).toMatch(/^ {2}batch: 50 of 50 delivered$/m);
  expect(stdout).toContain(`the workflow ${batch![1]}`);
}, 120_000);
