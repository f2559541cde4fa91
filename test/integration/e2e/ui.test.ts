import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { startDevServer, type DevServer } from '../../../src/dev/dev-server';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../../src/demo/flaky-endpoint';
import type { DeliveryHandle } from '../../../src/client/index';
import { parseKeyRing } from '../../../src/encryption/keys';
import { launchChromium } from '../../support/browser';
import { CLI } from '../../support/cli';
import { freePort } from '../../support/ports';
import { startHarness, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

// The Temporal UI, driven for real in headless Chromium (Debian's, installed by `npm test`'s pretest).
// UPDATE_SCREENSHOTS=1 also writes the screenshot the README links to, docs/ui-waiting-delivery.png.

let server: DevServer;
let h: Harness;
let endpoint: FlakyEndpoint;
let browser: Browser;
let uiUrl: string;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-ui-'));
  server = await startDevServer({ port: await freePort(), uiPort: await freePort(), logFile: path.join(dir, 'temporal.log') });
  uiUrl = server.uiUrl!;
  [h, endpoint] = await Promise.all([startHarness(server.address), startFlakyEndpoint()]);
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.stop();
  await endpoint?.close();
  await server?.stop();
});

test('the workflow list filtered by DeliveryState shows the waiting deliveries, and a waiting delivery says why', async () => {
  const submit = (device: string, target: string) =>
    h.redeliver.submit({
      kind: 'event',
      tenant: 'ui',
      device,
      messageId: `${device}-1`,
      payload: { n: 1 },
      target: `${endpoint.url}${target}`,
      policy: { jitter: 'none', initial: '37s', min: '37s' },
    });
  const waiting: DeliveryHandle[] = [
    await submit('door-1', '/down?fail=99&status=503'),
    await submit('door-2', '/down?fail=99&status=502'),
  ];
  const delivered = await submit('door-3', '/up');
  await delivered.result();
  for (const handle of waiting)
    await waitFor(
      () => handle.status(),
      (s) => s.state === 'waiting',
      10_000,
      'waiting',
    );
  await waitFor(
    async () => h.redeliver.count({ state: 'waiting' }),
    (n) => n === 2,
    10_000,
    'visibility',
  );

  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent('DeliveryState = "waiting"')}`);
  for (const handle of waiting) await page.getByText(handle.deliveryId).first().waitFor({ timeout: 30_000 });
  expect(await page.getByText(delivered.deliveryId).count()).toBe(0);

  // the detail page of a waiting delivery: its summary, current details and the named timer
  const { runId } = await waiting[0]!.workflow.describe();
  await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(waiting[0]!.deliveryId)}/${runId}/user-metadata`);
  // the UI renders summaries and details (Markdown) in sandboxed frames: read every frame's text
  const pageText = async () => (await Promise.all(page.frames().map((f) => f.innerText('body').catch(() => '')))).join('\n');
  const text = await waitFor(
    pageText,
    (t) =>
      /event ui\/door-1 →/.test(t) && /no jitter/.test(t) && /waiting \d+ s after HTTP 503 — attempt 2 next, expires in 6 d 23 h/.test(t),
    30_000,
    'summary, details and current details',
  );
  expect(text).toContain(`POST ${endpoint.url}/down?fail=99&status=503`);
  const shot = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-shot-')), 'waiting.png');
  await page.screenshot({ path: shot, fullPage: false });
  if (process.env.UPDATE_SCREENSHOTS) {
    mkdirSync(path.join(__dirname, '..', '..', '..', 'docs'), { recursive: true });
    await page.screenshot({ path: path.join(__dirname, '..', '..', '..', 'docs', 'ui-waiting-delivery.png') });
  }
  await page.close();
}, 120_000);

test('with encryption keys, `redeliver dev` points the UI at a codec server it alone can call: the UI shows the decrypted message', async () => {
  const keys = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
  const [port, devUiPort, codecPort] = [await freePort(), await freePort(), await freePort()];
  const db = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-ui-codec-')), 'dev.db');
  const dev = spawn(
    process.execPath,
    [CLI, 'dev', '--no-worker', '--port', String(port), '--ui-port', String(devUiPort), '--codec-port', String(codecPort), '--db', db],
    {
      env: { ...process.env, REDELIVER_ENCRYPTION_KEYS: keys },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  dev.stdout.on('data', (d: Buffer) => (out += d.toString()));
  dev.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => dev.once('close', resolve));
  const keyed = await (async () => {
    await waitFor(
      async () => out,
      (o) => o.includes('Temporal UI:') || dev.exitCode !== null,
      90_000,
      'redeliver dev',
    );
    return startHarness(`127.0.0.1:${port}`, { encryptionKeys: parseKeyRing(keys) });
  })();
  try {
    // the codec server serves no one without the token the UI got
    expect(out).toContain(`codec server at http://127.0.0.1:${codecPort}`);
    expect((await fetch(`http://127.0.0.1:${codecPort}/decode`, { method: 'POST', body: '{"payloads":[]}' })).status).toBe(401);

    const secret = `reading-${randomUUID()}`;
    const handle = await keyed.redeliver.submit({
      kind: 'event',
      tenant: 'ui',
      device: 'vault-1',
      payload: { secret },
      target: `${endpoint.url}/vault`,
    });
    await handle.result();
    const { runId } = await handle.workflow.describe();
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${devUiPort}/namespaces/default/workflows/${encodeURIComponent(handle.deliveryId)}/${runId}/history`);
    const pageText = async () => (await Promise.all(page.frames().map((f) => f.innerText('body').catch(() => '')))).join('\n');
    // the input, as the UI shows it once the codec server decoded it in the operator's browser
    await waitFor(pageText, (t) => t.includes(secret), 30_000, 'the decrypted message in the UI');
    await page.close();
  } finally {
    await keyed.stop();
    dev.kill('SIGINT');
    await exited;
  }
}, 150_000);
