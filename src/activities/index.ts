import type { Dispatcher } from 'undici';
import { createMqttPool, type MqttPool } from '../transports/mqtt';
import { createDeliverActivities } from './deliver';
import { createSubscriptionActivities } from './subscription';

export type { AttemptSuccess, AttemptFailureDetails } from './deliver';
export type { HandOff, HoldEnd, HoldFailureDetails, HoldHeartbeat, HoldOptions } from './subscription';

export interface ActivityDeps {
  /** The HTTP connection pool (see transports/http.ts). */
  http: Dispatcher;
  /**
   * The MQTT connection pool (see transports/mqtt.ts), also the source of the subscriptions' own
   * connections (credentials, SSRF guard). Default: one with the worker's environment's credentials.
   */
  mqtt?: MqttPool;
}

/** Every activity the worker registers, configured from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  const mqtt = deps.mqtt ?? createMqttPool();
  return { ...createDeliverActivities({ ...deps, mqtt }), ...createSubscriptionActivities({ ...deps, mqtt }) };
}

export type Activities = ReturnType<typeof createActivities>;
