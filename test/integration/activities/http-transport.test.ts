import { Agent, type Dispatcher } from 'undici';
import { createHttpAgent, sendHttp, type HttpAttempt, type HttpRequest } from '../../../src/transports/http';
import { RESET_AFTER_BYTES, startFaultServer, type FaultServer } from '../../support/fault-server';
import { collectGarbageEvery } from '../../support/gc';
import { freePort } from '../../support/ports';

// What undici 6 on Node 20 reports for each fault, as the transport hands it to classify.

let server: FaultServer;
let agent: Dispatcher;

beforeAll(async () => {
  server = await startFaultServer();
  agent = createHttpAgent({ allow: ['loopback'] }); // the SSRF guard refuses local servers unless allowed
});
afterAll(async () => {
  await agent?.destroy();
  await server?.close();
});

const send = (url: string, timeoutMs = 5_000, dispatcher = agent, messageId = 'transport-test', signal?: AbortSignal) =>
  sendHttp(
    {
      url,
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'message-id': messageId },
      body: 'hello',
      timeoutMs,
      ...(signal && { signal }),
    } satisfies HttpRequest,
    dispatcher,
  );

/** An agent whose DNS lookups fail with `code`, as Node's resolver fails them. */
function failingDns(code: string): Dispatcher {
  return new Agent({
    connect: {
      lookup: (hostname: string, _options: unknown, callback: (err: Error) => void) =>
        callback(Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code, syscall: 'getaddrinfo', hostname })),
    } as Agent.Options['connect'],
  });
}

test('an answer is an HTTP outcome, with the start of an error body as its detail', async () => {
  const long = 'x'.repeat(2_000);
  const { outcome, durationMs } = await send(`${server.url}/status/503?retry-after=2&body=${long}`);
  expect(outcome).toMatchObject({ kind: 'http', status: 503, headers: { 'retry-after': '2' }, detail: 'x'.repeat(512) });
  expect(durationMs).toBeGreaterThan(0);
  const ok = await send(`${server.url}/status/202?body=ok`);
  expect(ok.outcome).not.toHaveProperty('detail');
});

test('a response closed (FIN) mid-body → network ECONNRESET (undici: UND_ERR_SOCKET)', async () => {
  expect((await send(`${server.url}/cut`)).outcome).toEqual({ kind: 'network', code: 'ECONNRESET', message: 'other side closed' });
});

test('a response reset (RST) mid-body, while the client reads it → network ECONNRESET', async () => {
  const { outcome } = await send(`${server.url}/reset`, 5_000, agent, 'transport-reset');
  expect(outcome).toMatchObject({ kind: 'network', code: 'ECONNRESET' });
  // with body bytes still buffered when the RST lands, undici reports the close, not the reset
  expect(['other side closed', 'read ECONNRESET']).toContain((outcome as { message: string }).message);
  expect(server.flushedBeforeReset.get('transport-reset')).toBeGreaterThanOrEqual(RESET_AFTER_BYTES);
});

test('a connection reset (RST) before any response → network ECONNRESET', async () => {
  expect((await send(`${server.url}/reset-early`)).outcome).toEqual({ kind: 'network', code: 'ECONNRESET', message: 'read ECONNRESET' });
});

test.each([
  ['no response headers', '/hang'],
  ['a body that stalls after a 202', '/stall'],
])('%s → timeout after the attempt timeout', async (_, route) => {
  const { outcome, durationMs } = await send(`${server.url}${route}`, 300);
  expect(outcome).toEqual({ kind: 'timeout', afterMs: 300 });
  expect(durationMs).toBeGreaterThanOrEqual(295);
});

test('connection refused → ECONNREFUSED', async () => {
  const port = await freePort();
  expect((await send(`http://127.0.0.1:${port}/`)).outcome).toEqual({
    kind: 'network',
    code: 'ECONNREFUSED',
    message: `connect ECONNREFUSED 127.0.0.1:${port}`,
  });
});

test('an answer that is not HTTP → EPROTO (undici: HPE_INVALID_CONSTANT)', async () => {
  expect((await send(`${server.url}/garbage`)).outcome).toMatchObject({ kind: 'network', code: 'EPROTO' });
});

test('TLS: a self-signed certificate, and https:// to a plain HTTP port', async () => {
  expect((await send(`${server.tlsUrl}/status/202`)).outcome).toEqual({
    kind: 'tls',
    code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    message: 'self-signed certificate',
  });
  expect((await send(`${server.url.replace('http:', 'https:')}/status/202`)).outcome).toMatchObject({
    kind: 'tls',
    code: 'ERR_SSL_WRONG_VERSION_NUMBER',
  });
});

test.each(['EAI_AGAIN', 'ENOTFOUND'])('DNS failure %s is passed on as is', async (code) => {
  const dns = failingDns(code);
  try {
    expect((await send('http://sensor-gateway.example/telemetry', 5_000, dns)).outcome).toEqual({
      kind: 'network',
      code,
      message: `getaddrinfo ${code} sensor-gateway.example`,
    });
  } finally {
    await dns.destroy();
  }
});

test.each([
  ['not a URL', 'not a url'],
  ['a scheme other than http(s)', 'ftp://127.0.0.1/x'],
])('%s → invalid target', async (_, url) => {
  expect((await send(url)).outcome).toMatchObject({ kind: 'invalid-target' });
});

describe('the attempt timeout bounds the whole attempt, whatever the endpoint does', () => {
  const TIMEOUT = 1_000;
  /** The attempt, failed if it is still running well after its timeout (instead of hanging the test). */
  const bounded = (attempt: Promise<HttpAttempt>) =>
    Promise.race([
      attempt,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`the attempt was still running 4 s after its ${TIMEOUT} ms timeout`)), TIMEOUT + 4_000).unref(),
      ),
    ]);

  // an activity always passes its cancellation signal, and a busy worker collects garbage meanwhile: the
  // timeout's signal, held only weakly by AbortSignal.any, was collected and never fired
  test.each([
    ['a body trickled at 1 byte/s', () => `${server.url}/trickle`],
    ['an endless chunked body', () => `${server.url}/endless`],
    ['endless 102 Processing', () => `${server.interimUrl}/processing`],
    ['endless 100 Continue', () => `${server.interimUrl}/continue-forever`],
    ['no response headers', () => `${server.url}/hang`],
    ['a TLS handshake that never ends', () => server.interimUrl.replace('http:', 'https:')],
  ])('%s → timeout at the attempt timeout, with garbage collected meanwhile', async (what, url) => {
    const gc = collectGarbageEvery(50);
    try {
      const { outcome, durationMs } = await bounded(send(url(), TIMEOUT, agent, 'transport-gc', new AbortController().signal));
      expect(outcome).toEqual(what.startsWith('a TLS handshake') ? NO_CONNECTION : { kind: 'timeout', afterMs: TIMEOUT });
      expect(durationMs).toBeGreaterThanOrEqual(TIMEOUT - 5);
      // a forced collection holds the timer back by its own length
      expect(durationMs).toBeLessThan(TIMEOUT + 1_500 + gc.pausedMs());
    } finally {
      gc.stop();
    }
  });

  // a connection not open when the deadline passes: nothing was sent, and the outcome says so (the receiver cannot have it)
  const NO_CONNECTION = {
    kind: 'network',
    code: 'ETIMEDOUT',
    message: `no connection to the endpoint within the attempt's ${TIMEOUT} ms; nothing was sent`,
  };

  test('a DNS lookup that never answers → no connection at the attempt timeout (undici would wait for its 10 s connect timeout)', async () => {
    const silentDns = createHttpAgent({ allow: ['loopback'], connect: { lookup: () => undefined } as Agent.Options['connect'] });
    try {
      const { outcome, durationMs } = await bounded(send('http://sensor-gateway.example/telemetry', TIMEOUT, silentDns));
      expect(outcome).toEqual(NO_CONNECTION);
      expect(durationMs).toBeLessThan(TIMEOUT + 1_500);
    } finally {
      await silentDns.destroy();
    }
  });

  test('more attempts at once than a pool would hold, answered after the timeout: every one was sent, none waited unsent', async () => {
    // a pool of 64 connections held the rest back while their deadlines ran: 100 timeouts, 64 requests
    const ids = Array.from({ length: 100 }, (_, i) => `transport-crowd-${i}`);
    const results = await Promise.all(ids.map((id) => send(`${server.url}/hang`, TIMEOUT, agent, id)));
    expect(results.map((r) => r.outcome)).toEqual(ids.map(() => ({ kind: 'timeout', afterMs: TIMEOUT })));
    const arrived = new Set(server.received.map((r) => r.messageId));
    expect(ids.filter((id) => !arrived.has(id))).toEqual([]);
  });

  test('a cancellation (the worker handing the attempt back) ends it at once, even while connecting', async () => {
    const cancel = new AbortController();
    const attempt = send(server.interimUrl.replace('http:', 'https:'), 10_000, agent, 'transport-cancel', cancel.signal);
    setTimeout(() => cancel.abort(new Error('WORKER_SHUTDOWN')), 200);
    const { outcome, durationMs } = await attempt;
    expect(outcome).toEqual({ kind: 'timeout', afterMs: 10_000 });
    expect(durationMs).toBeLessThan(1_500);
  });
});

describe('interim (1xx) responses before the final one', () => {
  test.each([
    ['100 Continue', '/continue'],
    ['103 Early Hints with a Link header', '/early-hints'],
    ['100, 103 and 100 again, read a few bytes at a time', '/interim-bytewise'],
  ])('%s, then 202: the final status counts', async (_, route) => {
    const { outcome } = await send(`${server.interimUrl}${route}`, 5_000, agent, `interim-${route}`);
    expect(outcome).toEqual({ kind: 'http', status: 202, headers: { 'content-length': '8' } });
    expect(server.interimReceived.filter((r) => r.messageId === `interim-${route}`)).toHaveLength(1);
  });

  test('the connection stays in use after a 100 Continue: the next attempt goes over it', async () => {
    // one connection: the second request waits for it rather than open another
    const own = createHttpAgent({ allow: ['loopback'], connections: 1 });
    try {
      for (const id of ['keep-alive-1', 'keep-alive-2'])
        expect((await send(`${server.interimUrl}/continue`, 5_000, own, id)).outcome).toMatchObject({ status: 202 });
      const [first, second] = ['keep-alive-1', 'keep-alive-2'].map(
        (id) => server.interimReceived.find((r) => r.messageId === id)!.connection,
      );
      expect(second).toBe(first);
    } finally {
      await own.destroy();
    }
  });
});
