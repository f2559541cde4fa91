import type { SearchAttributePair } from '@temporalio/common';
import { deliveryDetails, deliverySummary, humanDuration } from '../delivery/summary';
import type { Delivery, DeliveryStateName } from '../delivery/types';
import type { CarriedState } from './delivery';
import { describePolicy } from '../policy/describe';
import type { CommandSubscription } from '../subscription/types';
import { endpointWorkflowId, tenantEventsWorkflowId } from './ids';
import {
  Attempts,
  DeliveryKind,
  DeliveryState,
  Device,
  Endpoint,
  EndpointHealth,
  LastErrorClass,
  OrderingKey,
  Tenant,
} from './search-attributes';

/*
 * How each workflow starts, whoever starts it: a delivery from Redeliver.submit and redrive or as
 * a command's response (by the command subscription), a subscription from Subscriptions.start, an
 * endpoint's workflow from a worker's report. One place, so that all are found and read alike in the UI.
 */

type Reuse = 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE';

/** A delivery's facts in its memo: what the UI shows of it without the (possibly encrypted) input. */
export function deliveryFacts(d: Delivery) {
  return { messageId: d.messageId, kind: d.kind, qos: d.qos, tenant: d.tenant, device: d.device, endpoint: d.endpoint };
}

/**
 * What operators filter the list by, from the start; the workflow keeps DeliveryState, Attempts and LastErrorClass
 * current. `state`: `queued` for an ordered delivery that starts behind others of its key (docs/ordering.md).
 */
export function deliverySearchAttributes(d: Delivery, state: DeliveryStateName = 'pending', carried?: CarriedState): SearchAttributePair[] {
  return [
    { key: DeliveryKind, value: d.kind },
    { key: DeliveryState, value: state },
    { key: Endpoint, value: d.endpoint },
    { key: Tenant, value: d.tenant },
    { key: Device, value: d.device },
    { key: Attempts, value: carried?.attempts ?? 0 },
    // a delivery that carries attempts from elsewhere (an outage hold) is searched by its last error's class from the start
    ...(carried?.lastError ? [{ key: LastErrorClass, value: carried.lastError.class }] : []),
    // an ordered delivery only: a namespace without the attribute still takes the others
    ...(d.orderingKey === undefined ? [] : [{ key: OrderingKey, value: d.orderingKey }]),
  ];
}

/**
 * A delivery's id, reuse policy, title and details in the UI, and search attributes. `reuse`: REJECT_DUPLICATE
 * keeps a finished delivery's id (resubmitting returns it instead of sending again); `note` follows the title.
 */
export function deliveryStartOptions(delivery: Delivery, reuse: Reuse, note?: string, state?: DeliveryStateName, carried?: CarriedState) {
  return {
    workflowId: delivery.deliveryId,
    workflowIdReusePolicy: reuse,
    staticSummary: deliverySummary(delivery) + (note ? ` (${note})` : ''),
    staticDetails: deliveryDetails(delivery),
    typedSearchAttributes: deliverySearchAttributes(delivery, state, carried),
  };
}

/** A subscription's facts in its memo. */
export function subscriptionFacts(s: CommandSubscription) {
  return { tenant: s.tenant, device: s.device, endpoint: s.endpoint, topic: s.broker.topic };
}

export function subscriptionSearchAttributes(s: CommandSubscription): SearchAttributePair[] {
  return [
    { key: Tenant, value: s.tenant },
    { key: Device, value: s.device },
    { key: Endpoint, value: s.endpoint },
  ];
}

/** A stopped subscription can be started again under its id (ALLOW_DUPLICATE); a running one is not started twice. */
export function subscriptionStartOptions(s: CommandSubscription) {
  return {
    workflowId: s.subscriptionId,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE' as Reuse,
    staticSummary: `command subscription ${s.tenant}/${s.device} ← ${s.endpoint} ${s.broker.topic}`,
    staticDetails: subscriptionDetails(s),
    typedSearchAttributes: subscriptionSearchAttributes(s),
  };
}

function subscriptionDetails(s: CommandSubscription): string {
  const { broker } = s;
  const credential = broker.credential ? `, credential "${broker.credential}"` : '';
  return [
    `**broker** MQTT ${broker.protocolVersion} ${broker.url}, topic filter ${broker.topic}, client id ${broker.clientId}${credential}`,
    `**callback** POST ${s.callback.url} (timeout ${humanDuration(s.callback.timeout)})`,
    `**resubscribe** ${describePolicy(s.policy)}`,
    `**downtime** a spell without a subscription longer than ${humanDuration(s.downtimeThresholdMs)}`,
  ].join('\n\n');
}

/** An endpoint's workflow, started by the first report of any worker of `taskQueue` and kept healthy until told otherwise. */
export function endpointStartOptions(endpoint: string, taskQueue: string) {
  return {
    workflowId: endpointWorkflowId(endpoint, taskQueue),
    typedSearchAttributes: [
      { key: Endpoint, value: endpoint },
      { key: EndpointHealth, value: 'healthy' },
    ],
    staticSummary: `endpoint ${endpoint}: health, retry budget and downtime`,
  };
}

/** A tenant's dead-letter aggregator, started by a worker's first report of the tenant's dead letters. */
export function tenantEventsStartOptions(tenant: string, taskQueue: string) {
  return {
    workflowId: tenantEventsWorkflowId(tenant, taskQueue),
    typedSearchAttributes: [{ key: Tenant, value: tenant }],
    staticSummary: `tenant ${tenant}: dead letters told to the operator URLs, one event per window`,
  };
}
