import { randomUUID } from 'node:crypto';
import { ApplicationFailure, type Info } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { Dispatcher } from 'undici';
import { createActivities } from '../../../src/activities';
import { type AttemptFailureDetails } from '../../../src/contract';
import { createDeliverActivities } from '../../../src/activities/deliver';
import { FAILURE_TYPES, type ErrorClass } from '../../../src/classify';
import { validateDelivery } from '../../../src/validation/delivery';
import type { ClassOverrides } from '../../../src/classify';
import { createHttpAgent } from '../../../src/transports/http';
import { RESET_AFTER_BYTES, SELF_SIGNED_CERT, startFaultServer, type FaultServer } from '../../support/fault-server';
import { collectGarbageEvery } from '../../support/gc';
import { freePort } from '../../support/ports';

let server: FaultServer;
let agent: Dispatcher;
// failed attempts are what these tests are about: the worker's warning for each is noise here
const logger = new DefaultLogger('ERROR');

beforeAll(async () => {
  server = await startFaultServer();
  agent = createHttpAgent({ allow: ['loopback'] }); // the SSRF guard refuses local servers unless allowed
});
afterAll(async () => {
  await agent?.destroy();
  await server?.close();
});

interface AttemptOptions {
  timeout?: number;
  overrides?: ClassOverrides;
  activities?: Pick<ReturnType<typeof createActivities>, 'sendAttempt'>;
  /** The activity's attempt and the details its previous attempt left, for an attempt that may wait for room. */
  limited?: Pick<Info, 'attempt' | 'heartbeatDetails'>;
}

/** One real `sendAttempt` of a fresh event, in a mock activity context. */
function attempt(url: string, options: AttemptOptions = {}) {
  const messageId = randomUUID();
  const delivery = validateDelivery({
    kind: 'event',
    tenant: 'acme',
    device: 'sensor-1',
    messageId,
    target: { url, timeout: options.timeout ?? 5_000 },
    payload: { t: 21.5 },
    ...(options.overrides && { overrides: options.overrides }),
  });
  const { sendAttempt } = options.activities ?? createActivities({ http: agent });
  const env = new MockActivityEnvironment(options.limited, { logger });
  return { messageId, run: options.limited ? env.run(sendAttempt, delivery, 1, { limited: true }) : env.run(sendAttempt, delivery, 1) };
}

/** The attempt's failure, checked to be what the workflow and operators rely on. */
async function failureOf(url: string, options: AttemptOptions = {}) {
  const { messageId, run } = attempt(url, options);
  const err: unknown = await run.then(
    (ok) => {
      throw new Error(`expected the attempt to fail, it succeeded: ${JSON.stringify(ok)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  const failure = err as ApplicationFailure;
  const details = failure.details?.[0] as AttemptFailureDetails;
  expect(failure.type).toBe(FAILURE_TYPES[details.class as ErrorClass]);
  expect(failure.nonRetryable).toBe(!details.retryable);
  expect(failure.message).toBe(details.reason);
  expect(details.durationMs).toBeGreaterThanOrEqual(0);
  return { failure, details, seen: server.received.filter((r) => r.messageId === messageId) };
}

describe('HTTP statuses from a real endpoint', () => {
  test.each([
    [400, 'client'],
    [404, 'client'],
    [413, 'client'],
    [500, 'server'],
    [502, 'server'],
    [503, 'server'],
    [504, 'server'],
  ] as const)('%d → %s', async (status, cls) => {
    const { failure, details, seen } = await failureOf(`${server.url}/status/${status}`);
    expect(details).toMatchObject({ class: cls, code: `http-${status}`, retryable: cls !== 'client' });
    expect(failure.nonRetryable).toBe(cls === 'client');
    expect(details).not.toHaveProperty('retryAfterMs');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.body).toBe('{"t":21.5}');
  });

  test("a rejection quotes the endpoint's explanation", async () => {
    const { details } = await failureOf(`${server.url}/status/400?body=${encodeURIComponent('qos-level header is invalid')}`);
    expect(details.reason).toContain('(the endpoint said: qos-level header is invalid)');
  });

  test('429 with Retry-After in seconds: well-known, with the hint', async () => {
    const { failure, details } = await failureOf(`${server.url}/status/429?retry-after=120`);
    expect(failure.type).toBe('DeliveryThrottled');
    expect(failure.nonRetryable).toBe(false);
    expect(details).toMatchObject({ class: 'well-known', code: 'http-429', retryAfterMs: 120_000 });
  });

  test('429 with Retry-After as an HTTP-date: the wait counts from the worker clock', async () => {
    const now = Date.UTC(2026, 0, 15, 12, 0, 0);
    const activities = createDeliverActivities({ http: agent, now: () => now });
    const date = encodeURIComponent('Thu, 15 Jan 2026 12:01:30 GMT');
    const { details } = await failureOf(`${server.url}/status/429?retry-after=${date}`, { activities });
    expect(details).toMatchObject({ class: 'well-known', retryAfterMs: 90_000 });
  });

  test("503 with Retry-After (Hono's no consumer): well-known, waits as asked", async () => {
    const { details } = await failureOf(`${server.url}/status/503?retry-after=2`);
    expect(details).toMatchObject({ class: 'well-known', code: 'http-503', retryable: true, retryAfterMs: 2_000 });
  });

  test('202 is delivered, and an override turns 409 into delivered', async () => {
    await expect(attempt(`${server.url}/status/202`).run).resolves.toMatchObject({ code: 'http-202' });
    await expect(attempt(`${server.url}/status/409`, { overrides: { 'http-409': 'success' } }).run).resolves.toMatchObject({
      code: 'http-409',
    });
  });

  test('100 Continue, then 202: delivered, not read as a reset', async () => {
    await expect(attempt(`${server.interimUrl}/continue`).run).resolves.toMatchObject({ code: 'http-202' });
  });

  test('100 Continue heads sent as fast as they are read, forever: a protocol error at once, not a timeout', async () => {
    const { details, failure } = await failureOf(`${server.interimUrl}/continue-flood`, { timeout: 10_000 });
    expect(details).toMatchObject({ class: 'connection', code: 'net-EPROTO', retryable: true });
    expect(failure.message).toContain('interim');
    expect(details.durationMs).toBeLessThan(2_000);
  });
});

/*
 * A first attempt that may wait for room runs again on the server when it waits, or when it is lost with its worker.
 * One that finds it was heartbeat as sent does not send the same attempt number again: it may have arrived.
 */
describe('the activity run again after its attempt', () => {
  test('waited for room: this run sends it', async () => {
    const limited = { attempt: 2, heartbeatDetails: { reservedAt: null, holds: 1 } };
    await expect(attempt(`${server.url}/status/202`, { limited }).run).resolves.toMatchObject({ code: 'http-202' });
  });

  test('the run before was heartbeat as sent: a worker-lost failure, nothing sent again', async () => {
    const heartbeatDetails = { reservedAt: null, sentAt: Date.now() - 6_000 };
    const { details, seen } = await failureOf(`${server.url}/status/202`, { limited: { attempt: 3, heartbeatDetails } });
    expect(details).toMatchObject({ class: 'connection', code: 'worker-lost', retryable: true });
    expect(seen).toEqual([]);
  });
});

describe('no usable response', () => {
  test('connection refused', async () => {
    const { failure, details } = await failureOf(`http://127.0.0.1:${await freePort()}/`);
    expect(failure.type).toBe('DeliveryNoResponse');
    expect(details).toMatchObject({ class: 'connection', code: 'net-ECONNREFUSED', retryable: true });
  });

  test('a 202 whose body breaks off (FIN) is not a delivery', async () => {
    const { details, seen } = await failureOf(`${server.url}/cut`);
    expect(details).toMatchObject({ class: 'connection', code: 'net-ECONNRESET' });
    expect(seen).toHaveLength(1);
  });

  test('a connection reset mid-response, while the client was reading the body', async () => {
    const { details, seen } = await failureOf(`${server.url}/reset`);
    expect(details).toMatchObject({ class: 'connection', code: 'net-ECONNRESET' });
    expect(server.flushedBeforeReset.get(seen[0]!.messageId!)).toBeGreaterThanOrEqual(RESET_AFTER_BYTES);
  });

  test('a server that never answers: the attempt times out on time', async () => {
    const timeout = 400;
    const { details, seen } = await failureOf(`${server.url}/hang`, { timeout });
    expect(details).toMatchObject({ class: 'connection', code: 'timeout', retryable: true });
    expect(details.reason).toContain(`${timeout} ms`);
    expect(details.durationMs).toBeGreaterThanOrEqual(timeout - 5);
    expect(details.durationMs).toBeLessThan(timeout + 2_000);
    expect(seen).toHaveLength(1);
  });

  test('a body trickled at 1 byte/s: the attempt times out on time, with garbage collected meanwhile', async () => {
    const timeout = 1_000;
    const gc = collectGarbageEvery(50);
    try {
      const { details } = await failureOf(`${server.url}/trickle`, { timeout });
      expect(details).toMatchObject({ class: 'connection', code: 'timeout', retryable: true });
      // a forced collection holds the timer back by its own length (gc.pausedMs)
      expect(details.durationMs).toBeLessThan(timeout + 1_500 + gc.pausedMs());
    } finally {
      gc.stop();
    }
  }, 20_000);

  test('a TLS server with an untrusted (self-signed) certificate is refused before anything is sent', async () => {
    const { details, seen } = await failureOf(`${server.tlsUrl}/status/202`);
    expect(details).toMatchObject({ class: 'connection', code: 'tls-DEPTH_ZERO_SELF_SIGNED_CERT', retryable: true });
    expect(seen).toHaveLength(0);
  });

  test('the same TLS server is reached once its certificate is trusted', async () => {
    const trusting = createHttpAgent({ allow: ['loopback'], connect: { ca: SELF_SIGNED_CERT } });
    try {
      const activities = createActivities({ http: trusting });
      await expect(attempt(`${server.tlsUrl}/status/202`, { activities }).run).resolves.toMatchObject({ code: 'http-202' });
    } finally {
      await trusting.destroy();
    }
  });
});
