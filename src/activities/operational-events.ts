import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { OperatorEvents } from '../config/operator-events';
import { DeliveryStarter } from '../starter/delivery-starter';
import { OPERATOR_TENANT } from '../delivery/ids';
import type { Delivery } from '../delivery/types';
import { envelopeOf, type OperationalEvent } from '../endpoints/operational-events';
import { InvalidInputError } from '../errors';
import { validateDelivery } from '../validation/delivery';

/** The tenant of every operational event's delivery: one filter in the UI (`Tenant = "redeliver"`) finds them all. */
export const EVENTS_TENANT = OPERATOR_TENANT;

export interface EventDeps {
  /** The worker's client: it starts the events' deliveries. */
  client: Client | null;
  /** Where events go; null: nowhere (the activity sends nothing). */
  operator: OperatorEvents | null;
}

/**
 * Operational events as deliveries (docs/endpoint-health.md, "Operational events"): one delivery (kind `event`)
 * per event and operator URL, so an operator URL that is down gets them by the retries, backoff and dead
 * letters of any delivery. The delivery id is the event's id (decided in the endpoint's workflow) and the URL's:
 * a retried activity finds its deliveries started and starts no second one.
 */
export function createEventActivities(deps: EventDeps) {
  return {
    async announceEvents(events: OperationalEvent[]): Promise<string[]> {
      const { client, operator } = deps;
      if (!client || !operator) return [];
      const starter = new DeliveryStarter(client, Context.current().info.taskQueue);
      const started: string[] = [];
      for (const event of events) {
        for (const url of operator.urls) {
          // an operator URL is not told about itself: those events could not reach it, and their dead letters would be told again
          if (new URL(url).host === event.data.endpoint) continue;
          const delivery = eventDelivery(event, url, operator.signing);
          // one already started by an earlier try of the activity stands
          await starter.start(delivery);
          started.push(delivery.deliveryId);
        }
      }
      return started;
    },
  };
}

/** The event's delivery to one operator URL, signed; a device per operator URL, so each has its own delivery of the same message id. */
function eventDelivery(event: OperationalEvent, url: string, signing: string): Delivery {
  try {
    return validateDelivery(
      {
        kind: 'event',
        tenant: EVENTS_TENANT,
        device: `operator-${createHash('sha256').update(url).digest('hex').slice(0, 12)}`,
        messageId: event.id,
        target: { url, signing },
        payload: envelopeOf(event),
      },
      { operationalEvent: true },
    );
  } catch (err) {
    // the configuration was checked at start: what is left cannot be mended by a retry
    if (err instanceof InvalidInputError)
      throw ApplicationFailure.nonRetryable(`operational event ${event.id}: ${err.message}`, 'InvalidEvent');
    throw err;
  }
}
