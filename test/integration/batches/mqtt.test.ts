/**
 * A batch's MQTT messages on a real Mosquitto broker: every one published, over the worker's one pooled
 * connection to the broker, with their QoS 1 PUBLISHes in flight together.
 */
import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import { startMosquitto, watch, type Mosquitto, type Watcher } from '../../support/mosquitto';
import { startHarness, type Harness } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const USERS = {
  device: { username: 'gateway', password: 'gateway-secret', acl: ['write event/#'] },
  observer: { username: 'observer', password: 'observer-secret', acl: ['readwrite #'] },
};

let broker: Mosquitto;
let h: Harness;
let watcher: Watcher | undefined;

beforeAll(async () => {
  [broker, h] = await Promise.all([startMosquitto({ users: Object.values(USERS) }), startHarness()]);
  // read by the worker at each connect: the delivery carries only the credential's name
  process.env.REDELIVER_MQTT_CREDENTIALS_GATEWAY = JSON.stringify({
    username: USERS.device.username,
    password: USERS.device.password,
    brokers: [broker.url],
    tenants: ['*'],
  });
});
afterAll(async () => {
  broker?.thaw();
  await watcher?.close();
  await h?.stop();
  await broker?.stop();
});

test('a batch of 20 QoS 1 events to one broker: all published over one connection, their PUBLISHes in flight together', async () => {
  const device = `m-${randomUUID().slice(0, 8)}`;
  const event = (): DeliveryInput => ({
    kind: 'event',
    tenant: 'acme',
    device,
    messageId: randomUUID(),
    payload: { n: randomUUID() },
    target: { url: broker.url, credential: 'gateway' },
  });
  watcher = await watch(broker.url, USERS.observer, `event/acme/${device}`);
  // the worker's connection to the broker, opened by a single delivery
  expect(await (await h.redeliver.submit(event())).result()).toMatchObject({ outcome: 'delivered', attempts: 1 });
  const before = h.mqtt.stats();
  expect(before.connections).toBe(1);

  // a broker that answers nothing for a while: every PUBLISH of the batch waits for its PUBACK at once
  broker.freeze();
  const inputs = Array.from({ length: 20 }, event);
  const submission = await h.redeliver.submitBatch(inputs);
  try {
    await waitFor(
      async () => h.mqtt.stats().inFlight,
      (n) => n === 20,
      15_000,
      '20 PUBLISHes waiting for their PUBACKs',
    );
  } finally {
    broker.thaw();
  }

  const batch = await submission.batches[0]!.result();
  expect(batch).toMatchObject({ messages: 20, delivered: 20, handedOver: 0 });
  expect(new Set(batch.results.map((r) => r.code))).toEqual(new Set(['mqtt-0x00']));
  expect(h.mqtt.stats()).toMatchObject({ connections: 1, connects: before.connects, inFlight: 0 });
  const published = await waitFor(
    async () => watcher!.seen.map((m) => m.userProperties['message-id']),
    (ids) => ids.length === 21,
    10_000,
    'every message at the observer',
  );
  expect(published.slice(1).sort()).toEqual(inputs.map((i) => i.messageId).sort());
  expect(watcher.seen.slice(1).every((m) => m.qos === 1 && m.userProperties['delivery-attempt'] === '1')).toBe(true);
});
