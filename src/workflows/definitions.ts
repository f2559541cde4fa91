import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DeliveryStatus } from '../delivery/types';
import type { TimelineBucket } from '../endpoints/timeline';
import type { EndpointDowntimeReport, EndpointReport, EndpointStatus } from '../endpoints/types';
import type { ReceivedCommand, SubscriptionStatus } from '../subscription/types';

/** Search attributes every delivery keeps current, so operators can filter the UI's workflow list. */
export const DeliveryKind = defineSearchAttributeKey('DeliveryKind', SearchAttributeType.KEYWORD);
export const DeliveryState = defineSearchAttributeKey('DeliveryState', SearchAttributeType.KEYWORD);
export const Endpoint = defineSearchAttributeKey('Endpoint', SearchAttributeType.KEYWORD);
export const Tenant = defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD);
export const Device = defineSearchAttributeKey('Device', SearchAttributeType.KEYWORD);
export const Attempts = defineSearchAttributeKey('Attempts', SearchAttributeType.INT);
export const LastErrorClass = defineSearchAttributeKey('LastErrorClass', SearchAttributeType.KEYWORD);
/** An endpoint's health (healthy, failing, recovering), on its endpoint workflow (workflows/endpoint.ts). */
export const EndpointHealth = defineSearchAttributeKey('EndpointHealth', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [DeliveryKind, DeliveryState, Endpoint, Tenant, Device, Attempts, LastErrorClass, EndpointHealth];

/** The delivery's current state, attempts, next attempt time, last error and attempt log. */
export const statusQuery = defineQuery<DeliveryStatus>('status');

/** Ends the current wait: the next attempt starts now. Refused unless the delivery is waiting. */
export const retryNowUpdate = defineUpdate<DeliveryStatus>('retryNow');

/** No further attempt until resumed (an attempt in flight finishes). Its max age does not run while paused. */
export const pauseUpdate = defineUpdate<DeliveryStatus, [reason: string]>('pause');

/** Lets a paused delivery go on: it attempts when its planned time has come (at once if it has passed). */
export const resumeUpdate = defineUpdate<DeliveryStatus>('resume');

// Command subscriptions (workflows/command-subscription.ts)

/** A subscription's state, downtime report, command counts and recent commands (the same query name as a delivery's). */
export const subscriptionStatusQuery = defineQuery<SubscriptionStatus>('status');

/** Sent by the holding activity once the broker granted the subscription (`hold` numbers the activity run). */
export const subscribedSignal = defineSignal<[{ hold: number; at: number }]>('subscribed');

/** Sent by the holding activity for each command it received; the broker gets its PUBACK only after this is recorded. */
export const commandReceivedSignal = defineSignal<[{ hold: number; command: Omit<ReceivedCommand, 'seq'> }]>('commandReceived');

/** Stops the subscription: it unsubscribes, hands the commands already received to the callback, and completes. */
export const stopSubscriptionUpdate = defineUpdate<SubscriptionStatus, [reason: string]>('stop');

// Endpoints (workflows/endpoint.ts)

/** Sent by each worker about once a second: the attempts it made to the endpoint, and the retries its budget held back. */
export const endpointReportSignal = defineSignal<[EndpointReport]>('report');

/** An endpoint's health, failure rate, workers retrying to it and downtime totals, as of a time (the caller's clock). */
export const endpointStatusQuery = defineQuery<EndpointStatus, [asOf?: number]>('status');

/** The endpoint's downtime periods and totals, as the guide defines downtime, since a time (epoch ms) if given. */
export const endpointDowntimeQuery = defineQuery<EndpointDowntimeReport, [since?: number, asOf?: number]>('downtime');

/** Attempts per second (sent, failed), for a plot of the endpoint's timeline. */
export const endpointTimelineQuery = defineQuery<TimelineBucket[]>('timeline');
