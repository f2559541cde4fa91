import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { Dispatcher } from 'undici';
import { createSubscriptionActivities } from '../../../src/activities/subscription';
import type { AttemptFailureDetails } from '../../../src/contract';
import type { ReceivedCommand } from '../../../src/subscription/types';
import { validateSubscription } from '../../../src/validation/subscription';
import { createHttpAgent } from '../../../src/transports/http';
import { createMqttPool, type MqttPool } from '../../../src/transports/mqtt';
import { startFaultServer, type FaultServer } from '../../support/fault-server';
import { collectGarbageEvery } from '../../support/gc';

// A command subscription's callback call (handCommand) holds its timeout as a delivery's attempt does.

let server: FaultServer;
let agent: Dispatcher;
let mqtt: MqttPool;
const logger = new DefaultLogger('ERROR');

beforeAll(async () => {
  server = await startFaultServer();
  agent = createHttpAgent({ allow: ['loopback'] });
  mqtt = createMqttPool({ allow: ['loopback'] });
});
afterAll(async () => {
  await agent?.destroy();
  await mqtt?.close();
  await server?.close();
});

const COMMAND: ReceivedCommand = {
  seq: 1,
  topic: 'command/acme/sensor-1/req/r-1/off',
  requestId: 'r-1',
  name: 'off',
  payload: '{}',
  encoding: 'utf8',
  contentType: null,
  receivedAt: Date.now(),
};

async function handCommand(callback: string, timeout: string) {
  const sub = validateSubscription({
    tenant: 'acme',
    device: 'sensor-1',
    broker: 'mqtt://127.0.0.1:1883',
    callback: { url: callback, timeout },
  });
  const { handCommand: hand } = createSubscriptionActivities({ http: agent, mqtt });
  return new MockActivityEnvironment(undefined, { logger }).run(hand, sub, COMMAND, 1);
}

test.each([
  ['a TLS handshake that never ends', () => server.interimUrl.replace('http:', 'https:')],
  ['an answer trickled at 1 byte/s', () => `${server.url}/trickle`],
])(
  '%s: the call fails as a timeout at the callback timeout, with garbage collected meanwhile',
  async (_, url) => {
    const gc = collectGarbageEvery(50);
    const started = performance.now();
    try {
      const err = await handCommand(url(), '1s').then(
        (ok) => new Error(`expected the call to fail, it succeeded: ${JSON.stringify(ok)}`),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect((err as ApplicationFailure).details?.[0]).toMatchObject({
        class: 'connection',
        code: 'timeout',
      } satisfies Partial<AttemptFailureDetails>);
      // the call's own duration: the wall time around it also holds the first test's one-time setup (2.53 s once);
      // a forced collection holds the timer back by its own length (CI once: 2,664 ms for a 1 s timeout)
      const { durationMs } = (err as ApplicationFailure).details?.[0] as AttemptFailureDetails;
      expect(durationMs).toBeLessThan(1_000 + 1_500 + gc.pausedMs());
      expect(performance.now() - started).toBeLessThan(8_000 + gc.pausedMs());
    } finally {
      gc.stop();
    }
  },
  20_000,
);

test('100 Continue, then the callback answers: the answer counts', async () => {
  await expect(handCommand(`${server.interimUrl}/continue`, '5s')).resolves.toMatchObject({ code: 'http-202', httpStatus: 202 });
});
