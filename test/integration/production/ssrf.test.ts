import { createServer, type Server } from 'node:http';
import type { LookupAddress } from 'node:dns';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities } from '../../../src/activities';
import { type AttemptFailureDetails } from '../../../src/contract';
import { classify } from '../../../src/classify';
import { validateDelivery } from '../../../src/validation/delivery';
import { checkPeer, AddressGuard, type LookupFunction } from '../../../src/transports/address-guard';
import { createHttpAgent, sendHttp } from '../../../src/transports/http';
import { createMqttPool, type MqttEndpoint } from '../../../src/transports/mqtt';
import { startTcpListener, type TcpListener } from '../../support/tcp-listener';
import { startHarness, type Harness } from '../../support/temporal';

// The SSRF guard where it acts: on the address each connection is about to be made to. No real DNS: names
// resolve through a lookup of the test's own, which net.connect calls for the very connection it makes.

/** A loopback endpoint that answers 202 and counts the TCP connections made to it. */
interface Endpoint {
  port: number;
  connections: number;
  requests: number;
  close(): Promise<void>;
}

async function startEndpoint(host = '127.0.0.1', options: { closeEach?: boolean } = {}): Promise<Endpoint> {
  const endpoint = { port: 0, connections: 0, requests: 0 } as Endpoint;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    endpoint.requests++;
    req.resume();
    req.on('end', () => res.writeHead(202, options.closeEach ? { connection: 'close' } : {}).end());
  });
  server.on('connection', (socket: Socket) => {
    endpoint.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  endpoint.port = (server.address() as AddressInfo).port;
  endpoint.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return endpoint;
}

/** A resolver that answers from a table (in order, one answer per call when a list of lists is given). */
function fakeDns(answers: Record<string, string | string[] | string[][]>): LookupFunction & { calls: string[] } {
  const calls: string[] = [];
  const served = new Map<string, number>();
  const lookup = ((
    hostname: string,
    options: { all?: boolean },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    calls.push(hostname);
    const entry = answers[hostname];
    if (entry === undefined) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
    const n = served.get(hostname) ?? 0;
    served.set(hostname, n + 1);
    const list =
      typeof entry === 'string'
        ? [entry]
        : Array.isArray(entry[0])
          ? (entry as string[][])[Math.min(n, entry.length - 1)]!
          : (entry as string[]);
    const all = list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (options.all) callback(null, all);
    else callback(null, all[0]!.address, all[0]!.family);
  }) as LookupFunction & { calls: string[] };
  lookup.calls = calls;
  return lookup;
}

const send = (url: string, dispatcher: ReturnType<typeof createHttpAgent>) =>
  sendHttp({ url, method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello', timeoutMs: 5_000 }, dispatcher);

let endpoint: Endpoint;
beforeAll(async () => {
  endpoint = await startEndpoint();
});
afterAll(async () => {
  await endpoint?.close();
});

describe('by default, nothing but public addresses', () => {
  const agent = createHttpAgent();
  afterAll(() => agent.close());

  test.each([
    ['an IPv4 loopback literal', (p: number) => `http://127.0.0.1:${p}/`, '127.0.0.1'],
    ['the IPv6 loopback literal', (p: number) => `http://[::1]:${p}/`, '::1'],
    ['IPv4-mapped IPv6 loopback', (p: number) => `http://[::ffff:127.0.0.1]:${p}/`, '::ffff:7f00:1'],
    ['0.0.0.0, which Linux connects to loopback', (p: number) => `http://0.0.0.0:${p}/`, '0.0.0.0'],
    ['127.0.0.1 as one decimal number', (p: number) => `http://2130706433:${p}/`, '127.0.0.1'],
    ['127.0.0.1 in hex', (p: number) => `http://0x7f.0.0.1:${p}/`, '127.0.0.1'],
  ])('%s is refused before any connection', async (_what, url, address) => {
    const before = endpoint.connections;
    const { outcome } = await send(url(endpoint.port), agent);
    expect(outcome).toMatchObject({ kind: 'blocked-address', address });
    expect(['loopback', 'this-network']).toContain((outcome as { range: string }).range);
    expect(endpoint.connections).toBe(before);
  });

  test('a DNS name that resolves to 127.0.0.1 is refused: the resolved address is checked, not the name', async () => {
    const lookup = fakeDns({ 'innocent.example': '127.0.0.1' });
    const guarded = createHttpAgent({ connect: { lookup } });
    try {
      const before = endpoint.connections;
      const { outcome } = await send(`http://innocent.example:${endpoint.port}/`, guarded);
      expect(outcome).toEqual({
        kind: 'blocked-address',
        host: 'innocent.example',
        address: '127.0.0.1',
        range: 'loopback',
        description: 'a loopback address',
      });
      expect(lookup.calls).toEqual(['innocent.example']);
      expect(endpoint.connections).toBe(before);
      // classified as a client error: the delivery is rejected, with the reason
      const c = classify(outcome);
      expect(c).toMatchObject({ class: 'client', retryable: false, code: 'ssrf-blocked' });
      expect(c.reason).toBe(
        "the target's address 127.0.0.1 is a loopback address (loopback); the SSRF guard refuses it and nothing was sent. If the endpoint is trusted, allow the range in REDELIVER_ALLOW_ADDRESSES (innocent.example resolves to it)",
      );
    } finally {
      await guarded.close();
    }
  });

  test.each([
    ['metadata', '169.254.169.254'],
    ['metadata', 'fd00:ec2::254'],
    ['this-network', '0.0.0.0'],
    ['private', '10.0.0.7'],
    ['private', '172.16.5.4'],
    ['private', '192.168.1.20'],
    ['private', 'fd12:3456::1'],
    ['link-local', '169.254.10.10'],
    ['link-local', 'fe80::1'],
    ['cgnat', '100.64.0.1'],
    ['multicast', '224.0.0.251'],
    ['multicast', 'ff02::fb'],
    ['reserved', '240.0.0.1'],
    ['loopback', '::ffff:127.0.0.1'],
  ])('a name resolving to a %s address (%s) is refused at connect time', async (range, address) => {
    const guarded = createHttpAgent({ connect: { lookup: fakeDns({ 'target.example': address }) } });
    try {
      const { outcome } = await send('http://target.example:8080/', guarded);
      expect(outcome).toMatchObject({ kind: 'blocked-address', host: 'target.example', address, range });
    } finally {
      await guarded.close();
    }
  });

  test('a custom connector, which would bypass the guard, is not accepted', () => {
    expect(() => createHttpAgent({ connect: () => undefined })).toThrow('bypass the SSRF guard');
  });
});

describe('no socket before the guard has spoken, on every transport', () => {
  // A listener that counts TCP connections, not requests: a refusal that comes after the connect is too late.
  const listeners: { v4?: TcpListener; v6?: TcpListener } = {};
  beforeAll(async () => {
    [listeners.v4, listeners.v6] = await Promise.all([startTcpListener('127.0.0.1'), startTcpListener('::1')]);
  });
  afterAll(async () => {
    await Promise.all([listeners.v4?.close(), listeners.v6?.close()]);
  });

  /** The literals that reach a listener: on 127.0.0.1 (0.0.0.0 connects to loopback on Linux) or on ::1. */
  const literals = (schemes: string[]) => {
    const cases: [string, () => TcpListener | undefined, (l: TcpListener) => string][] = [];
    for (const scheme of schemes) {
      cases.push([`${scheme}://127.0.0.1`, () => listeners.v4, (l) => l.url(scheme)]);
      cases.push([`${scheme}://0.0.0.0`, () => listeners.v4, (l) => `${scheme}://0.0.0.0:${l.port}`]);
      cases.push([`${scheme}://[::ffff:127.0.0.1]`, () => listeners.v4, (l) => `${scheme}://[::ffff:127.0.0.1]:${l.port}`]);
      cases.push([`${scheme}://[::1]`, () => listeners.v6, (l) => l.url(scheme)]);
    }
    return cases;
  };

  /** Runs the attempt and expects it refused by the guard with no connection at the listener. */
  const refusedWithoutConnecting = async (listener: TcpListener | undefined, attempt: () => Promise<{ kind: string }>) => {
    if (!listener) return; // no IPv6 on this machine
    const before = await listener.settled();
    expect(await attempt()).toMatchObject({ kind: 'blocked-address' });
    expect(await listener.settled()).toBe(before);
  };

  test.each(literals(['http', 'https']))('HTTP: %s is refused with no connection', async (_what, listener, url) => {
    const agent = createHttpAgent();
    try {
      await refusedWithoutConnecting(listener(), async () => (await send(url(listener()!), agent)).outcome);
    } finally {
      await agent.close();
    }
  });

  test.each(literals(['mqtt', 'mqtts']))('MQTT delivery: %s is refused with no connection', async (_what, listener, url) => {
    const pool = createMqttPool({ credentials: () => undefined, allow: [] });
    try {
      await refusedWithoutConnecting(listener(), async () => {
        const publish = {
          url: url(listener()!),
          protocolVersion: '5',
          credential: null,
          tenant: 'acme',
          tls: null,
          topic: 't',
          payload: 'x',
          qos: 1,
          timeoutMs: 5_000,
        } as const;
        return (await pool.publish(publish)).outcome;
      });
      expect(pool.stats().connections).toBe(0);
    } finally {
      await pool.close();
    }
  });

  test.each(literals(['mqtt', 'mqtts']))('MQTT command subscription: %s is refused with no connection', async (_what, listener, url) => {
    const pool = createMqttPool({ credentials: () => undefined, allow: [] });
    try {
      await refusedWithoutConnecting(listener(), async () => {
        const endpoint: MqttEndpoint = { url: url(listener()!), protocolVersion: '5', credential: null, tenant: 'acme', tls: null };
        const connected = await pool.connectDedicated(endpoint, { clientId: 'ssrf-test', clean: true, timeoutMs: 5_000 });
        return connected.ok ? { kind: 'connected' } : connected.outcome;
      });
    } finally {
      await pool.close();
    }
  });
});

describe('an allow-list opens ranges explicitly', () => {
  test('with loopback allowed, the same name reaches the endpoint through the same lookup', async () => {
    const lookup = fakeDns({ 'innocent.example': '127.0.0.1' });
    const agent = createHttpAgent({ allow: ['loopback'], connect: { lookup } });
    try {
      const before = endpoint.connections;
      expect((await send(`http://innocent.example:${endpoint.port}/`, agent)).outcome).toMatchObject({ kind: 'http', status: 202 });
      expect(endpoint.connections).toBe(before + 1);
    } finally {
      await agent.close();
    }
  });

  test('of several answers, blocked ones are dropped and the connection goes to an allowed one', async () => {
    const other = await startEndpoint('127.0.0.2');
    const agent = createHttpAgent({
      allow: ['127.0.0.2/32'],
      connect: { lookup: fakeDns({ 'mixed.example': ['127.0.0.1', '10.0.0.1', '127.0.0.2'] }) },
    });
    try {
      expect((await send(`http://mixed.example:${other.port}/`, agent)).outcome).toMatchObject({ kind: 'http', status: 202 });
      expect(other.connections).toBe(1);
    } finally {
      await agent.close();
      await other.close();
    }
  });

  test('DNS rebinding: every new connection is checked again, so a name that turns to loopback is refused', async () => {
    const rebinding = await startEndpoint('127.0.0.2', { closeEach: true });
    // allowed first (127.0.0.2 is opened by CIDR), then the name "rebinds" to 127.0.0.1, which is not
    const lookup = fakeDns({ 'rebind.example': [['127.0.0.2'], ['127.0.0.1']] });
    const agent = createHttpAgent({ allow: ['127.0.0.2/32'], connect: { lookup } });
    try {
      const url = `http://rebind.example:${rebinding.port}/`;
      expect((await send(url, agent)).outcome).toMatchObject({ kind: 'http', status: 202 });
      // the endpoint closed that connection: the next attempt connects anew, and looks the name up anew
      expect((await send(url, agent)).outcome).toMatchObject({ kind: 'blocked-address', address: '127.0.0.1', range: 'loopback' });
      expect(lookup.calls).toEqual(['rebind.example', 'rebind.example']);
      expect(rebinding.requests).toBe(1);
    } finally {
      await agent.close();
      await rebinding.close();
    }
  });

  test('the connected peer is checked too: whatever path an address took, it is judged once connected', () => {
    const peer = (remoteAddress: string) => ({ remoteAddress }) as Socket;
    expect(() => checkPeer(AddressGuard.DEFAULT, 'x.example', peer('127.0.0.1'))).toThrow(
      'x.example resolves to 127.0.0.1: a loopback address, which the SSRF guard refuses',
    );
    expect(() => checkPeer(AddressGuard.parse('loopback'), 'x.example', peer('127.0.0.1'))).not.toThrow();
    expect(() => checkPeer(AddressGuard.DEFAULT, 'x.example', peer('93.184.216.34'))).not.toThrow();
  });
});

describe('a refused target ends the delivery as rejected', () => {
  const logger = new DefaultLogger('ERROR');

  test('the attempt fails with a non-retryable DeliveryRejected, code ssrf-blocked', async () => {
    const agent = createHttpAgent();
    try {
      const delivery = validateDelivery({
        kind: 'event',
        tenant: 'acme',
        device: 'd1',
        target: `http://127.0.0.1:${endpoint.port}/in`,
        payload: 'x',
      });
      const err = await new MockActivityEnvironment(undefined, { logger })
        .run(createActivities({ http: agent }).sendAttempt, delivery, 1)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      const failure = err as ApplicationFailure;
      expect(failure).toMatchObject({ type: 'DeliveryRejected', nonRetryable: true });
      expect(failure.details?.[0] as AttemptFailureDetails).toMatchObject({ class: 'client', code: 'ssrf-blocked', retryable: false });
    } finally {
      await agent.close();
    }
  });

  describe('on a worker with the default guard', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness(undefined, { allowAddresses: [] });
    });
    afterAll(async () => {
      await h?.stop();
    });

    test('a delivery to a loopback endpoint is rejected at once, with the reason, and nothing is sent', async () => {
      const before = endpoint.connections;
      const handle = await h.redeliver.submit({
        kind: 'event',
        tenant: 'acme',
        device: 'd1',
        messageId: randomUUID(),
        target: `http://127.0.0.1:${endpoint.port}/in`,
        payload: 'x',
      });
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'rejected', attempts: 1, lastError: { class: 'client', code: 'ssrf-blocked' } });
      expect(result.reason).toContain('127.0.0.1 is a loopback address');
      expect(endpoint.connections).toBe(before);
    });

    test('an MQTT delivery to a loopback broker is rejected at once, and no connection is made', async () => {
      const broker = (await startTcpListener('127.0.0.1'))!;
      try {
        const handle = await h.redeliver.submit({
          kind: 'event',
          tenant: 'acme',
          device: 'd1',
          messageId: randomUUID(),
          target: broker.url('mqtt'),
          payload: 'x',
        });
        expect(await handle.result()).toMatchObject({
          outcome: 'rejected',
          attempts: 1,
          lastError: { class: 'client', code: 'ssrf-blocked' },
        });
        expect(await broker.settled()).toBe(0);
      } finally {
        await broker.close();
      }
    });
  });
});
