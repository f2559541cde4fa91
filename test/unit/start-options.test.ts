import type { SearchAttributePair } from '@temporalio/common';
import { deliveryStart, fairnessKeyOf } from '../../src/starter/delivery-start';
import { validateDelivery } from '../../src/validation/delivery';
import { validateSubscription } from '../../src/validation/subscription';
import { deliveryStartOptions, endpointStartOptions, SEARCH_ATTRIBUTES, subscriptionStartOptions } from '../../src/contract';

// How each workflow starts, whoever starts it: the list filters, titles and ids operators rely on.

const NOW = Date.parse('2026-11-21T12:00:00Z');
const device = { tenant: 'acme', device: 'sensor-1' };
const target = 'https://ingest.example.com/events';
const delivery = validateDelivery({ ...device, kind: 'event', messageId: 'm-1', target, payload: {} }, { now: NOW });
const callback = 'https://app.example.com/commands';
const subscription = validateSubscription({ ...device, broker: 'mqtt://broker.example.com:1883', callback }, { now: NOW });
const named = (pairs: SearchAttributePair[]) => Object.fromEntries(pairs.map((p) => [p.key.name, p.value]));
const registered = new Set(SEARCH_ATTRIBUTES.map((k) => k.name));

test('a delivery starts under its id, pending in the list with its kind, endpoint, tenant and device', () => {
  const options = deliveryStartOptions(delivery, 'REJECT_DUPLICATE');
  expect(options).toEqual({
    workflowId: 'delivery/acme/sensor-1/m-1',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    staticSummary: 'event acme/sensor-1 → ingest.example.com',
    staticDetails: expect.stringContaining('**target** POST https://ingest.example.com/events'),
    typedSearchAttributes: expect.any(Array),
  });
  expect(named(options.typedSearchAttributes)).toEqual({
    DeliveryKind: 'event',
    DeliveryState: 'pending',
    Endpoint: 'ingest.example.com',
    Tenant: 'acme',
    Device: 'sensor-1',
    Attempts: 0,
  });
  // a redrive and a command's response say so after the title
  expect(deliveryStartOptions(delivery, 'ALLOW_DUPLICATE', 'redriven')).toMatchObject({
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    staticSummary: 'event acme/sensor-1 → ingest.example.com (redriven)',
  });
});

test('a subscription and an endpoint workflow start under their ids, with their own search attributes', () => {
  const options = subscriptionStartOptions(subscription);
  expect(options).toMatchObject({
    workflowId: 'subscription/acme/sensor-1',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    staticSummary: 'command subscription acme/sensor-1 ← broker.example.com:1883 command/acme/sensor-1/req/#',
  });
  const headings = options.staticDetails.split('\n\n').map((line) => line.split(' ')[0]);
  expect(headings).toEqual(['**broker**', '**callback**', '**resubscribe**', '**downtime**']);
  expect(named(options.typedSearchAttributes)).toEqual({ Tenant: 'acme', Device: 'sensor-1', Endpoint: 'broker.example.com:1883' });

  expect(endpointStartOptions('api.example.com', 'redeliver')).toMatchObject({
    workflowId: 'endpoint/api.example.com',
    staticSummary: 'endpoint api.example.com: health, retry budget and downtime',
  });
  expect(endpointStartOptions('api.example.com', 'q2').workflowId).toBe('endpoint/q2/api.example.com');
  expect(named(endpointStartOptions('api.example.com', 'q2').typedSearchAttributes)).toEqual({
    Endpoint: 'api.example.com',
    EndpointHealth: 'healthy',
  });
});

test('every search attribute a start sets is one the namespace registers (a start with another would fail)', () => {
  const used = [
    ...deliveryStartOptions(delivery, 'REJECT_DUPLICATE').typedSearchAttributes,
    ...subscriptionStartOptions(subscription).typedSearchAttributes,
    ...endpointStartOptions('api.example.com', 'redeliver').typedSearchAttributes,
  ];
  for (const { key } of used) expect(registered).toContain(key.name);
});

test("a delivery's workflow carries its tenant as the task queue's fairness key, within Temporal's 64 bytes", () => {
  expect(deliveryStart(delivery, { taskQueue: 'redeliver', reuse: 'REJECT_DUPLICATE' }).priority).toEqual({ fairnessKey: 'acme' });
  const long = 't'.repeat(100);
  const [a, b] = [fairnessKeyOf(`${long}-a`), fairnessKeyOf(`${long}-b`)];
  expect(a.length).toBeLessThanOrEqual(64);
  expect(a).not.toBe(b);
  expect(fairnessKeyOf(`${long}-a`)).toBe(a);
  expect(fairnessKeyOf('t'.repeat(64))).toBe('t'.repeat(64));
});
