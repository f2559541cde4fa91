import type { Client } from '@temporalio/client';
import type { Dispatcher } from 'undici';
import type { EndpointAdmission } from '../worker-services/admission';
import type { RetryBudget } from '../endpoints/budget';
import { holdsOutages, type EndpointControl } from '../endpoints/controls';
import type { EndpointReporter } from '../worker-services/endpoint-reporter';
import type { RecoveryPacer } from '../worker-services/pacer';
import { createMqttPool, type MqttPool } from '../transports/mqtt';
import type { SigningSecretResolver } from '../transports/signing';
import type { OperatorEvents } from '../config/operator-events';
import type { Activities } from '../contract';
import { createBatchActivities } from './batch';
import { createAttempt, createDeliverActivities, createRequestAttempt, type AttemptListener } from './deliver';
import { createProgressActivities } from './progress';
import { createEventActivities } from './operational-events';
import { createOrderingActivities } from './ordering';
import { submissionCheck } from '../worker-services/submission-check';
import { createReleaseActivities } from './release';
import { createRetryActivities } from './retry';
import { createSubscriptionActivities } from './subscription';

export interface ActivityDeps {
  /** The HTTP connection pool (createHttpAgent). */
  http: Dispatcher;
  /**
   * The MQTT connection pool (createMqttPool), also the source of the subscriptions' own
   * connections (credentials, SSRF guard). Default: one with the worker's environment's credentials.
   */
  mqtt?: MqttPool;
  /** The worker's per-endpoint retry budget; none: retries are not held back. */
  budget?: RetryBudget | null;
  /** Hears of every attempt and tells each endpoint's share of the budget (docs/endpoint-health.md, "The retry budget"). */
  reporter?: EndpointReporter | null;
  /** Hears of every attempt; default the reporter. */
  listener?: AttemptListener;
  /**
   * A client of the worker's namespace, with the worker's data converter: a paused delivery reads its retrying
   * activity's progress with it, and when it encrypts, a delivery's first attempt checks it was submitted encrypted.
   */
  client?: Client | null;
  /** Signing secrets by the names HTTP targets give (docs/deliveries.md, "Signed requests"). Default: the environment, read at every request. */
  signing?: SigningSecretResolver;
  /**
   * The worker's per-endpoint limits over every attempt (docs/endpoint-health.md, "Limits: every attempt, per
   * endpoint"); none: attempts are not limited.
   */
  admission?: EndpointAdmission | null;
  /** Where operational events go (docs/endpoint-health.md, "Operational events"); none: nowhere. */
  operatorEvents?: OperatorEvents | null;
  /** The worker's recovery pacer (docs/endpoint-health.md, "Outages: holds and the recovery pace"); none: no outage holds. */
  pacer?: RecoveryPacer | null;
  /** Whether a batch's messages wait in an outage hold for endpoints without an `outage` setting (REDELIVER_OUTAGE_HOLD). Default true. */
  outageHold?: boolean;
  /** The endpoint's control as the worker knows it (its `outage` setting); none: the worker's default applies everywhere. */
  control?: (endpoint: string) => Promise<EndpointControl | undefined>;
}

/** Every activity the worker registers, configured from its dependencies. */
export function createActivities(deps: ActivityDeps): Activities {
  const mqtt = deps.mqtt ?? createMqttPool();
  const reporter = deps.reporter ?? undefined;
  const listener = deps.listener ?? reporter ?? undefined;
  const attemptDeps = { http: deps.http, mqtt, ...(listener && { listener }), ...(deps.signing && { signing: deps.signing }) };
  const checkSubmission = submissionCheck(deps.client ?? null);
  const attempt = createAttempt(attemptDeps);
  return {
    ...createDeliverActivities(attemptDeps, checkSubmission, deps.admission),
    ...createRetryActivities({
      attempt,
      admission: deps.admission ?? null,
      ...(checkSubmission && { checkSubmission }),
      budget: deps.budget ?? null,
      ...(reporter && {
        share: (endpoint: string) => reporter.share(endpoint),
        heldBack: (endpoint: string) => reporter.heldBack(endpoint),
        ended: (endpoint: string, outcome: 'expired' | 'exhausted', at: number) => reporter.ended(endpoint, outcome, at),
        retried: (endpoint: string, lateMs: number, plannedAt: number) => reporter.retried(endpoint, lateMs, plannedAt),
      }),
    }),
    ...createBatchActivities({
      attempt,
      attemptRequest: createRequestAttempt(attemptDeps),
      client: deps.client ?? null,
      ...(checkSubmission && { checkSubmission }),
      admission: deps.admission ?? null,
      pacer: deps.pacer ?? null,
      holdsOutages: async (endpoint) => holdsOutages(await deps.control?.(endpoint), deps.outageHold ?? true),
    }),
    ...createReleaseActivities({ attempt, client: deps.client ?? null, pacer: deps.pacer ?? null, admission: deps.admission ?? null }),
    ...createProgressActivities(deps.client ?? null),
    ...createOrderingActivities(deps.client ?? null),
    ...createEventActivities({ client: deps.client ?? null, operator: deps.operatorEvents ?? null }),
    ...createSubscriptionActivities({ ...deps, mqtt }),
  };
}
