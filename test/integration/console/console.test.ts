/// <reference lib="dom" />
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { DeliveryInput } from '../../../src/delivery/types';
import { launchChromium } from '../../support/browser';
import { startApi, type TestApi } from '../../support/api';
import { useHarnessAndReceiver } from '../../support/setup';
import { waitFor } from '../../support/wait';

// The console of `redeliver serve`, driven in headless Chromium with two tenants' keys and an operator's: each sees
// only its own, every text from outside is shown as text, and the actions go through the API's own rules.
// UPDATE_SCREENSHOTS=1 also writes the screenshots docs/console.md shows (docs/console-*.png).
jest.setTimeout(120_000);

const env = useHarnessAndReceiver();
const A = `a-${randomUUID().slice(0, 8)}`;
const B = `b-${randomUUID().slice(0, 8)}`;
const KEYS = { a: `key-a-${randomUUID()}`, b: `key-b-${randomUUID()}`, op: `key-op-${randomUUID()}`, aRead: `key-ar-${randomUUID()}` };
const ALL_ROLES = ['produce', 'operate', 'read'];
/** What an endpoint answers that must never become markup in the console. */
const HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>';
let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  api = await startApi(
    env.h.redeliver,
    [
      { key: KEYS.a, tenants: [A], roles: ALL_ROLES, name: 'tenant-a' },
      { key: KEYS.b, tenants: [B], roles: ALL_ROLES, name: 'tenant-b' },
      { key: KEYS.aRead, tenants: [A], roles: ['read'], name: 'tenant-a-read' },
      { key: KEYS.op, tenants: ['*'], roles: ALL_ROLES, name: 'operator' },
    ],
    { REDELIVER_TEMPORAL_UI_URL: 'http://localhost:8233' },
  );
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
});

const event = (over: Partial<DeliveryInput> = {}): DeliveryInput => ({
  kind: 'event',
  tenant: A,
  device: 'd1',
  messageId: randomUUID(),
  target: `${env.receiver.url}/in`,
  payload: { v: 1 },
  ...over,
});
const pageOf = (deliveryId: string) => `${api.url}/console/deliveries/${encodeURIComponent(deliveryId)}`;

/** A browser of its own, signed in with `key` as a user does: the key typed in the one password field, Enter. */
async function signedIn(key: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${api.url}/console/`);
  await page.locator('input[type=password]').fill(key);
  await page.locator('input[type=password]').press('Enter');
  await page.waitForURL(/\/console\/deliveries$/);
  return { context, page };
}

async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS === '1')
    await page.screenshot({ path: path.join(__dirname, '../../../docs', `console-${name}.png`), fullPage: true });
}

test('sign-in: one password field; Enter sets an HttpOnly SameSite=Strict cookie; the key is in no URL nor log; a wrong key is refused', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const answer = await page.goto(`${api.url}/console/`);
  expect(answer!.headers()['content-security-policy']).toMatch(/default-src 'none'/);
  expect(answer!.headers()['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
  expect(await page.locator('input').evaluateAll((inputs) => inputs.filter((i) => (i as HTMLInputElement).type !== 'hidden').length)).toBe(
    1,
  );
  await screenshot(page, 'sign-in');

  await page.locator('input[type=password]').fill('not-a-key-of-this-server');
  await page.locator('input[type=password]').press('Enter');
  await expect(page.locator('.problem').textContent()).resolves.toMatch(/not one this server knows/);
  expect(await context.cookies()).not.toContainEqual(expect.objectContaining({ name: 'redeliver_console' }));

  const urls: string[] = [];
  page.on('request', (r) => urls.push(r.url()));
  await page.locator('input[type=password]').fill(KEYS.a);
  await page.locator('input[type=password]').press('Enter');
  await page.waitForURL(/\/console\/deliveries$/);
  const session = (await context.cookies()).find((c) => c.name === 'redeliver_console')!;
  expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
  expect(session.value).not.toContain(KEYS.a);
  expect(await page.locator('header').textContent()).toContain('tenant-a');
  expect(urls.some((u) => u.includes(KEYS.a))).toBe(false);
  expect(JSON.stringify(api.log)).not.toContain(KEYS.a);

  // signed out: the session is gone, its pages lead to the sign-in
  await page.locator('header button', { hasText: 'Sign out' }).click();
  await page.goto(pageOf('delivery/x/y/z'));
  expect(page.url()).toBe(`${api.url}/console/`);
  await context.close();
});

test("deliveries: a tenant's key lists its own, filtered by device and state, and goes by id to one; another tenant's key lists only its own", async () => {
  const device = `search-${randomUUID().slice(0, 8)}`;
  env.receiver.route('/search-rejected', () => ({ status: 400 }));
  const delivered = await env.h.redeliver.submit(event({ device }));
  const rejected = await env.h.redeliver.submit(event({ device, target: `${env.receiver.url}/search-rejected` }));
  const elsewhere = await env.h.redeliver.submit(event({ device: `${device}-other` }));
  // B's own goes elsewhere, once (B sends nothing to the receiver: the endpoints' test counts on it)
  const theirs = await env.h.redeliver.submit(event({ tenant: B, device, target: 'http://127.0.0.2:9/in', policy: { maxAttempts: 1 } }));
  for (const h of [delivered, rejected, elsewhere, theirs]) await h.result();
  const listed = async (page: Page) => (await page.locator('table tbody tr td:first-child').allTextContents()).map((t) => t.trim());

  const { context, page } = await signedIn(KEYS.a);
  // by device, as a user fills the form in and submits it
  await page.locator('input[name=device]').fill(device);
  await page.locator('button', { hasText: 'Search' }).click();
  await page.waitForURL(/device=/);
  // listings read visibility, which catches up with a closed workflow shortly after
  await waitFor(
    () => listed(page),
    (ids) => ids.length === 2,
    15_000,
    'both of the device',
  );
  await expect(listed(page)).resolves.toEqual(expect.arrayContaining([delivered.deliveryId, rejected.deliveryId]));
  await screenshot(page, 'deliveries');
  // and by state
  await page.goto(`${api.url}/console/deliveries?device=${device}&state=rejected`);
  await expect(listed(page)).resolves.toEqual([rejected.deliveryId]);
  // an id goes straight to its page
  await page.goto(`${api.url}/console/deliveries`);
  await page.locator('input[name=id]').fill(delivered.deliveryId);
  await page.locator('input[name=id]').press('Enter');
  await page.waitForURL(pageOf(delivered.deliveryId));
  await expect(page.locator('.summary .state').textContent()).resolves.toBe('delivered');

  // tenant B's key: the same search lists B's own delivery, not A's
  const b = await signedIn(KEYS.b);
  await b.page.goto(`${api.url}/console/deliveries?device=${device}`);
  await waitFor(
    () => listed(b.page),
    (ids) => ids.length > 0,
    15_000,
    "B's delivery listed",
  );
  await expect(listed(b.page)).resolves.toEqual([theirs.deliveryId]);
  await Promise.all([context.close(), b.context.close()]);
});

test("a delivery's page: every attempt with its code, class (503: well-known), the endpoint's answer as text and Retry-After; another tenant's is not found", async () => {
  env.receiver.route('/hostile', ({ nth }) => (nth === 1 ? { status: 503, retryAfter: '1', body: HOSTILE } : { status: 202 }));
  const input = event({
    target: `${env.receiver.url}/hostile`,
    device: 'sensor<b>1<i>',
    policy: { jitter: 'none', initial: '1s', min: '1s' },
  });
  const handle = await env.h.redeliver.submit(input);
  await handle.result();

  const { context, page } = await signedIn(KEYS.a);
  const dialogs: string[] = [];
  page.on('dialog', (d) => void dialogs.push(d.message()));
  await page.goto(pageOf(handle.deliveryId));
  const rows = page.locator('table.attempts tbody tr');
  await expect(rows.count()).resolves.toBe(2);
  const first = (await rows.nth(0).locator('td').allTextContents()).map((t) => t.trim());
  expect(first[3]).toBe('http-503');
  expect(first[4]).toBe('well-known');
  expect(first[5]).toContain(HOSTILE.slice(0, 40));
  expect(first[6]).toBe('1 s');
  expect((await rows.nth(1).locator('td').allTextContents())[3]).toBe('http-202');
  // what came from outside is text: no script, no image came of it; the device's markup is shown, not applied
  await expect(page.locator('main script, main img, main b, main i').count()).resolves.toBe(0);
  await expect(page.locator('dl.facts').textContent()).resolves.toContain('sensor<b>1<i>');
  await expect(page.locator('dl.facts').textContent()).resolves.toMatch(/Policy\s*none jitter|Policy.*1 s/);
  const link = await page.locator('a', { hasText: 'its workflow' }).getAttribute('href');
  expect(link).toBe(`http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(handle.deliveryId)}`);
  expect(dialogs).toEqual([]);
  await screenshot(page, 'delivery');

  // tenant B's key: not found, whatever the id; its own search does not list it
  const b = await signedIn(KEYS.b);
  const answer = await b.page.goto(pageOf(handle.deliveryId));
  expect(answer!.status()).toBe(404);
  await expect(b.page.locator('h1').textContent()).resolves.toBe('Not found');
  await b.page.goto(`${api.url}/console/deliveries`);
  await expect(b.page.locator('main').textContent()).resolves.not.toContain(handle.deliveryId);
  await Promise.all([context.close(), b.context.close()]);
});

test('controls: pause with a reason, resume, retry now and cancel from the page; a read key has none; a post without its token is refused', async () => {
  env.receiver.route('/down', () => ({ status: 503 }));
  const handle = await env.h.redeliver.submit(
    event({ target: `${env.receiver.url}/down`, policy: { initial: '1h', min: '1h', max: '1h', jitter: 'none' } }),
  );
  await waitFor(
    () => handle.status(),
    (s) => s.state === 'waiting',
    20_000,
    'the delivery to wait',
  );

  const reader = await signedIn(KEYS.aRead);
  await reader.page.goto(pageOf(handle.deliveryId));
  await expect(reader.page.locator('.controls').count()).resolves.toBe(0);
  await reader.context.close();

  const { context, page } = await signedIn(KEYS.a);
  await page.goto(pageOf(handle.deliveryId));
  await page.locator('.controls input[name=reason]').fill('maintenance <i>window</i>');
  await page.locator('.controls button', { hasText: 'Pause' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Paused.');
  await expect(page.locator('dl.facts').textContent()).resolves.toContain('maintenance <i>window</i>');
  expect((await handle.status()).state).toBe('paused');
  await page.locator('.controls button', { hasText: 'Resume' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Resumed.');
  expect((await handle.status()).state).toBe('waiting');
  const before = env.receiver.of(input(handle.deliveryId)).length;
  await page.locator('.controls button', { hasText: 'Retry now' }).click();
  await waitFor(
    async () => env.receiver.of(input(handle.deliveryId)).length,
    (n) => n > before,
    20_000,
    'the retried attempt',
  );

  // a cross-site form (no token of this session) is refused, and changes nothing
  const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const forged = await fetch(`${pageOf(handle.deliveryId)}/cancel`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
    redirect: 'manual',
  });
  expect(forged.status).toBe(403);
  expect((await handle.status()).state).not.toBe('cancelled');

  await page.goto(pageOf(handle.deliveryId));
  await page.locator('.controls button', { hasText: 'Cancel' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Cancelled.');
  await expect(handle.result()).resolves.toMatchObject({ outcome: 'cancelled' });
  await context.close();
});

/** The message id of a delivery id (the receiver logs requests by it). */
const input = (deliveryId: string) => deliveryId.split('/').at(-1)!;

test('dead letters: filtered to the key tenant, one redriven from its page, a filtered set redriven with its progress', async () => {
  env.receiver.route('/refuse', ({ nth }) => ({ status: nth === 1 ? 400 : 202 }));
  const device = `dl-${randomUUID().slice(0, 6)}`;
  const handles = await Promise.all([1, 2, 3].map(() => env.h.redeliver.submit(event({ device, target: `${env.receiver.url}/refuse` }))));
  await Promise.all(handles.map((h) => h.result()));
  const [one, ...rest] = handles.map((h) => h.deliveryId);

  const b = await signedIn(KEYS.b);
  await b.page.goto(`${api.url}/console/dead-letters`);
  await expect(b.page.locator('main').textContent()).resolves.not.toContain(device);
  await b.context.close();

  const { context, page } = await signedIn(KEYS.a);
  await page.goto(`${api.url}/console/dead-letters`);
  await page.locator('form.filter input[name=device]').fill(device);
  await page.locator('form.filter button').click();
  await expect(page.locator('table tbody tr').count()).resolves.toBe(3);
  await screenshot(page, 'dead-letters');

  await page.locator('table a', { hasText: one! }).click();
  await expect(page.locator('.ended').textContent()).resolves.toMatch(/Ended rejected/);
  await page.locator('.controls button', { hasText: 'Redrive' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toMatch(/Redriven/);
  await expect(env.h.redeliver.getHandle(one!).result()).resolves.toMatchObject({ outcome: 'delivered' });

  // the listing shows every run that ended a dead letter: the one redriven too (its new run is delivered)
  await page.goto(`${api.url}/console/dead-letters?device=${encodeURIComponent(device)}`);
  await expect(page.locator('table tbody tr').count()).resolves.toBe(3);
  await page.locator('button', { hasText: 'Redrive every dead letter matching this filter' }).click();
  await page.waitForURL(/\/console\/redrives\//);
  // the job page refreshes itself (a meta refresh: no script) until the job is done
  await waitFor(
    async () => (await page.reload(), await page.locator('.state').textContent()),
    (state) => state === 'done',
    30_000,
    'the redrive job to finish',
  );
  await expect(page.locator('.progress').textContent()).resolves.toBe('3 of 3');
  await expect(page.locator('main').textContent()).resolves.toMatch(/Redriven \(2\)[\s\S]*Already redriven \(1\)/);
  await screenshot(page, 'redrive');
  await Promise.all(rest.map(async (id) => expect(await env.h.redeliver.getHandle(id).result()).toMatchObject({ outcome: 'delivered' })));
  await context.close();
});

test('endpoints: health and downtime, the timeline plot, settings for an operator key, the what-if plot; a tenant sees only endpoints it sends to', async () => {
  const endpoint = new URL(env.receiver.url).host;
  await env.h.redeliver.submit(event()).then((h) => h.result());
  const { context, page } = await signedIn(KEYS.op);
  await page.goto(`${api.url}/console/endpoints`);
  await expect(page.locator('table').textContent()).resolves.toContain(endpoint);
  await screenshot(page, 'endpoints');
  await page.locator('table a', { hasText: endpoint }).click();
  await expect(page.locator('h2', { hasText: 'Downtime' }).count()).resolves.toBe(1);
  const loaded = (selector: string) =>
    page.locator(selector).evaluate((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0);
  await page.locator('figure img').waitFor();
  await waitFor(
    () => loaded('figure img'),
    (ok) => ok,
    10_000,
    'the timeline plot to load',
  );

  await page.locator('form.settings input[name=maxInFlight]').fill('7');
  await page.locator('form.settings button').click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Done: settings.');
  await expect(page.locator('dl.facts').textContent()).resolves.toMatch(/Max in flight\s*7/);
  expect((await env.h.redeliver.endpoint(endpoint).control()).settings.maxInFlight).toBe(7);
  await screenshot(page, 'endpoint');

  await page.locator('form.filter input[name=initial]').fill('30s');
  await page.locator('form.filter input[name=budget]').fill('5/s');
  await page.locator('form.filter button', { hasText: 'Replay' }).click();
  await expect(page.locator('main p').first().textContent()).resolves.toMatch(/retry budget 5\/s/);
  await waitFor(
    () => loaded('figure img'),
    (ok) => ok,
    10_000,
    'the what-if plot to load',
  );
  await screenshot(page, 'what-if');
  // a bad candidate names its field
  await page.goto(`${page.url().replace(/\?.*/, '')}?multiplier=lots`);
  await expect(page.locator('.problem').textContent()).resolves.toMatch(/multiplier: must be a number/);

  // tenant A sends there: it sees the endpoint, without its settings; tenant B does not
  const a = await signedIn(KEYS.a);
  await a.page.goto(`${api.url}/console/endpoints/${encodeURIComponent(endpoint)}`);
  await expect(a.page.locator('h1').textContent()).resolves.toContain(endpoint);
  await expect(a.page.locator('form.settings').count()).resolves.toBe(0);
  const b = await signedIn(KEYS.b);
  await expect(b.page.goto(`${api.url}/console/endpoints/${encodeURIComponent(endpoint)}`).then((r) => r!.status())).resolves.toBe(404);
  await expect(
    b.page.goto(`${api.url}/console/endpoints/${encodeURIComponent(endpoint)}/timeline.svg`).then((r) => r!.status()),
  ).resolves.toBe(404);
  await Promise.all([context.close(), a.context.close(), b.context.close()]);
});
