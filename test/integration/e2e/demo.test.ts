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

  // then an outage under two batches of 200: their messages wait in one hold (no workflow each), the second batch sends
  // none, only probes reach the endpoint while it is down, and every message is delivered once it is back
  const outage = [
    ...stdout.matchAll(/^ {2}batch\/demo\/outage-\d{14}-\d: 0 delivered, (\d+) held in (\S+), (\d+) handed over .*it sent (\d+) of 200$/gm),
  ].map(([, held, hold, own, sent]) => ({ held: Number(held), hold: hold!, own: Number(own), sent: Number(sent) }));
  expect(outage).toHaveLength(2);
  const [first, second] = outage as [(typeof outage)[0], (typeof outage)[0]];
  expect(first.hold).toMatch(/^hold\/demo\/127\.0\.0\.1:\d+\/\d+$/);
  expect(first.held + first.own).toBe(200);
  expect(first.own).toBeLessThanOrEqual(2);
  expect(second).toEqual({ held: 200, hold: first.hold, own: 0, sent: 0 });
  const waiting = /^ {2}(hold\/\S+): (\d+) messages wait/m.exec(stdout);
  expect(waiting?.slice(1)).toEqual([first.hold, String(400 - first.own)]);
  const down = /^ {2}while down \(([\d.]+) s\) the endpoint saw \d+ requests: .*, (\d+) probes from the hold/m.exec(stdout);
  expect(down).not.toBeNull();
  const [downFor, probes] = [Number(down![1]), Number(down![2])];
  expect(probes).toBeGreaterThanOrEqual(1);
  expect(probes).toBeLessThanOrEqual(Math.ceil(downFor) + 2);
  expect(stdout).toMatch(/^ {2}outage: 400 of 400 delivered after the endpoint came back/m);
  expect(stdout).toContain(`the workflow ${first.hold}`);
}, 180_000);
