import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DeliveryStatus, Outcome } from '../delivery/types';
import type { EndpointControl, EndpointSettingsChange, ModeChange } from '../endpoints/controls';
import type { TimelineBucket } from '../endpoints/timeline';
import type { OutageRecording } from '../endpoints/recording';
import type { EndpointDowntimeReport, EndpointReport, EndpointStatus } from '../endpoints/types';
import type { TenantReport } from '../endpoints/tenant-events';
import type { ReceivedCommand, SubscriptionStatus } from '../subscription/types';
import type { EnqueueRequest, OrderingNotice, OrderingStatus, Place } from './ordering';

/** The delivery's current state, attempts, next attempt time, last error and attempt log. */
export const statusQuery = defineQuery<DeliveryStatus>('status');

/** Ends the current wait: the next attempt starts now. Refused unless the delivery is waiting. */
export const retryNowUpdate = defineUpdate<DeliveryStatus>('retryNow');

/** No further attempt until resumed (an attempt in flight finishes). Its max age does not run while paused. */
export const pauseUpdate = defineUpdate<DeliveryStatus, [reason: string]>('pause');

/** Lets a paused delivery go on: it attempts when its planned time has come (at once if it has passed). */
export const resumeUpdate = defineUpdate<DeliveryStatus>('resume');

// Command subscriptions

/** A subscription's state, downtime report, command counts and recent commands (the same query name as a delivery's). */
export const subscriptionStatusQuery = defineQuery<SubscriptionStatus>('status');

/** Sent by the holding activity once the broker granted the subscription (`hold` numbers the activity run). */
export const subscribedSignal = defineSignal<[{ hold: number; at: number }]>('subscribed');

/** Sent by the holding activity for each command it received; the broker gets its PUBACK only after this is recorded. */
export const commandReceivedSignal = defineSignal<[{ hold: number; command: Omit<ReceivedCommand, 'seq'> }]>('commandReceived');

/** Stops the subscription: it unsubscribes, hands the commands already received to the callback, and completes. */
export const stopSubscriptionUpdate = defineUpdate<SubscriptionStatus, [reason: string]>('stop');

// Endpoints

/** Sent by each worker about once a second: the attempts it made to the endpoint, and the retries its budget held back. */
export const endpointReportSignal = defineSignal<[EndpointReport]>('report');

/** Sent by a worker about once a second while a tenant's deliveries end dead letters (the tenant's dead-letter aggregator). */
export const tenantDeadLettersSignal = defineSignal<[TenantReport]>('deadLetters');

/** An endpoint's health, failure rate, workers retrying to it and downtime totals, as of a time (the caller's clock). */
export const endpointStatusQuery = defineQuery<EndpointStatus, [asOf?: number]>('status');

/** The endpoint's downtime periods and totals, as the guide defines downtime, since a time (epoch ms) if given. */
export const endpointDowntimeQuery = defineQuery<EndpointDowntimeReport, [since?: number, asOf?: number]>('downtime');

/** Attempts per second (sent, failed), for a plot of the endpoint's timeline. */
export const endpointTimelineQuery = defineQuery<TimelineBucket[]>('timeline');

/** Sets the endpoint's own limits (`null` gives a field back to the workers' default); answers with the control, which the workflow's memo publishes. */
export const endpointSettingsUpdate = defineUpdate<EndpointControl, [EndpointSettingsChange]>('settings');

/** Pauses, resumes, disables or enables the endpoint (every worker holds or ends its attempts to it); answers with the control. */
export const endpointModeUpdate = defineUpdate<EndpointControl, [ModeChange]>('mode');

/** The endpoint's attempts, failure periods and arrivals since a time (epoch ms), for a replay (simulate --from-endpoint). */
export const endpointRecordingQuery = defineQuery<OutageRecording, [since?: number, asOf?: number]>('recording');

// Ordering keys (the key's sequencer, and a delivery's side)

/** Takes places on the key, in the order given (a place held already is kept): sent by the client before it starts the deliveries. */
export const enqueueUpdate = defineUpdate<Place[][], [EnqueueRequest[]]>('enqueue');

/** Gives back a place taken for a delivery that turned out to exist already and has ended (a resubmit). */
export const withdrawSignal = defineSignal<[{ deliveryId: string }]>('withdraw');

/**
 * Sent by whoever started ordered deliveries (the client, a batch's activity) once they exist, each with what it
 * shows it waits for: their places can be admitted (a signal reaches them now).
 */
export const startedSignal = defineSignal<[{ started: { deliveryId: string; behind: string | null }[] }]>('started');

/** Sent by an ordered delivery as it ends (a dead letter's outcome may stop the key). */
export const leftSignal = defineSignal<[{ deliveryId: string; outcome: Outcome }]>('left');

/** Lets the key go on past the dead letter that stopped it (or past a head that ended without saying so). */
export const releaseUpdate = defineUpdate<OrderingStatus, [deliveryId: string]>('release');

/** The key's head, queue (its first `limit` places), block and counts. */
export const orderingStatusQuery = defineQuery<OrderingStatus, [limit?: number]>('status');

/** From the key's sequencer to a delivery: its turn has come, or where it is queued. */
export const orderingNoticeSignal = defineSignal<[OrderingNotice]>('ordering');
