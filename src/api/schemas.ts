import { z } from 'zod';
import { CONTROL_REFUSAL_KINDS } from '../errors';
import { DEAD_LETTER_STATES } from '../delivery/filter';
import type { DeliveryStateName } from '../delivery/types';
import type { EndpointSettingsInput } from '../endpoints/controls';
import { deliveryInputSchema } from '../validation/delivery';
import { idSchema, MAX_DELIVERY_ID_LENGTH, MAX_ID_LENGTH } from '../validation/limits';
import { FILTER_CLASSES, FILTER_KINDS, FILTER_STATES } from '../validation/filter';
import type { Assignable } from '../validation/schema-types';
import { subscriptionInputSchema } from '../validation/subscription';

// The HTTP API's schemas: the routes parse their parameters with them, and the OpenAPI document is made from
// them (openApiDocument). Request bodies are the client API's own schemas; responses are what the client API
// returns, and the routes' types check that they match.

const KINDS = FILTER_KINDS as ['telemetry', 'event', 'command-response'];
const CLASSES = FILTER_CLASSES as ['client', 'well-known', 'server', 'connection'];
const STATES = [...FILTER_STATES, 'attempting'] as unknown as [DeliveryStateName, ...DeliveryStateName[]];
const OUTCOMES = ['delivered', 'rejected', 'expired', 'exhausted', 'dropped', 'cancelled'] as const;

export const problemSchema = z
  .object({
    type: z.string().meta({ description: 'always `about:blank`: the status says what kind of problem it is' }),
    title: z.string().meta({ description: "the status's reason phrase" }),
    status: z.number().int(),
    detail: z.string().meta({ description: 'what was wrong, in words' }),
    problems: z
      .array(z.object({ field: z.string(), message: z.string() }))
      .optional()
      .meta({ description: "every wrong field at once (400, 409), as the client API's InvalidInputError lists them" }),
    kind: z
      .enum(CONTROL_REFUSAL_KINDS)
      .optional()
      .meta({ description: 'why a control or redrive was refused (409): DeliveryControlError.kind' }),
  })
  .meta({ id: 'Problem', description: 'An error, as RFC 9457 problem details (`application/problem+json`).' });

/** The longest path parameter a route takes: a delivery id (a subscription id is at most 270, an endpoint 300). */
export const MAX_PATH_PARAM_LENGTH = MAX_DELIVERY_ID_LENGTH;

/**
 * The ids the API reference's examples name (its curl commands, and the document's parameter examples), by operation:
 * each one a delivery that operation can act on (a waiting delivery, a paused one, a dead letter), so that a client
 * or a fuzzer (schemathesis) that tries the examples reaches each operation's logic. The schemathesis test makes them.
 */
export const EXAMPLE_IDS = {
  getDelivery: 'delivery/acme/sensor-1/msg-42',
  retryNowDelivery: 'delivery/acme/sensor-1/msg-43',
  pauseDelivery: 'delivery/acme/sensor-1/msg-44',
  /** a paused delivery */
  resumeDelivery: 'delivery/acme/sensor-1/msg-45',
  cancelDelivery: 'delivery/acme/sensor-1/msg-46',
  /** dead letters */
  getDeadLetter: 'delivery/acme/sensor-1/msg-41',
  redrive: 'delivery/acme/sensor-1/msg-40',
  subscription: 'subscription/acme/sensor-1',
} as const;

/** A delivery id as a path takes it; `example`, the one the operation's reference names. */
export const deliveryIdParams = (example: string) =>
  z.object({
    deliveryId: z
      .string()
      .min(1)
      .max(MAX_DELIVERY_ID_LENGTH)
      .meta({
        description: '`delivery/<tenant>/<device>/<messageId>`, URL-encoded (`delivery%2Facme%2Fsensor-1%2Fmsg-42`)',
        examples: [example],
      }),
  });

/** `subscription/<tenant>/<device>`: 270 characters at most. */
const MAX_SUBSCRIPTION_ID_LENGTH = 'subscription/'.length + 2 * MAX_ID_LENGTH + 1;

export const subscriptionIdParams = z.object({
  subscriptionId: z
    .string()
    .min(1)
    .max(MAX_SUBSCRIPTION_ID_LENGTH)
    .meta({ description: '`subscription/<tenant>/<device>`, URL-encoded', examples: [EXAMPLE_IDS.subscription] }),
});

export const jobIdParams = z.object({ jobId: z.uuid().meta({ description: "the job's id, as starting it answered" }) });

const stateList = (states: readonly string[]) =>
  z
    .union([z.string(), z.array(z.string())])
    .optional()
    .meta({ description: `comma-separated (or repeated): ${states.join(', ')}` });

// what a visibility query may hold: Temporal's dev server answers some characters (NUL) with UNAVAILABLE
const host = z.string().regex(/^[\x21-\x7e]{1,300}$/, { error: 'must be host[:port], printable ASCII' });

/** The CLI's filter flags, by the same names (camelCase), checked by the same code (filterFrom). */
const filterFields = (states: readonly string[]) => ({
  state: stateList(states),
  kind: z.enum(KINDS, { error: `must be one of ${KINDS.join(', ')}` }).optional(),
  tenant: idSchema('tenant').optional().meta({ description: "one of the key's tenants; default: all of them" }),
  device: idSchema('device').optional(),
  endpoint: host.optional().meta({ description: 'the target host[:port]' }),
  errorClass: z.enum(CLASSES, { error: `must be one of ${CLASSES.join(', ')}` }).optional(),
  since: z.string().optional().meta({ description: 'an ISO date, or a duration ago such as 2h, 7d' }),
  until: z.string().optional().meta({ description: 'an ISO date, or a duration ago' }),
});

/** `limit` and `cursor` of a listing that pages: `what` per page, from 1 to `max`, `fallback` by default. */
function pageFieldsOf(what: string, max: number, fallback: number) {
  const error = `must be a whole number from 1 to ${max}`;
  return {
    limit: z.coerce
      .number({ error })
      .int({ error })
      .min(1, { error })
      .max(max, { error })
      .optional()
      .meta({ description: `${what} per page, default ${fallback}` }),
    cursor: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,4096}$/, { error: 'must be the nextCursor of a page of this listing' })
      .optional()
      .meta({ description: "the previous page's `nextCursor`" }),
  };
}

const pageFields = pageFieldsOf('deliveries', 1000, 100);
/** Each endpoint on a page is asked for its status (and its downtime) at once: the bound keeps a page's answer short. */
export const ENDPOINTS_PAGE = { max: 100, fallback: 50 };
const endpointPageFields = pageFieldsOf('endpoints', ENDPOINTS_PAGE.max, ENDPOINTS_PAGE.fallback);

export const listQuery = z.object({ ...filterFields(FILTER_STATES), ...pageFields });
export const deadLetterQuery = z.object({ ...filterFields(DEAD_LETTER_STATES), ...pageFields });
export const redriveAllBody = z
  .object({
    ...filterFields(DEAD_LETTER_STATES),
    concurrency: z.number().int().min(1).max(1000).optional().meta({ description: 'redrives in flight at once, default 16' }),
  })
  .strict()
  .meta({ id: 'RedriveFilter', description: 'Which dead letters to redrive: the filter of `GET /v1/dead-letters`.' });

export const endpointQuery = z.object({
  endpoint: host.optional().meta({ description: 'just this host[:port] (one page)' }),
  ...endpointPageFields,
});
export const downtimeQuery = z.object({
  endpoint: host.optional().meta({ description: 'just this host[:port] (one page)' }),
  since: z.string().optional().meta({ description: 'an ISO date, or a duration ago such as 24h' }),
  ...endpointPageFields,
});

export const endpointParams = z.object({
  endpoint: host.meta({
    description: 'host[:port] as `GET /v1/endpoints` names it, or a URL of it; URL-encoded (`ingest.example.com`, `%5B%3A%3A1%5D%3A8080`)',
  }),
});

const durationOrMs = (range: string, extra = '') =>
  z
    .union([z.number(), z.string(), z.null()])
    .optional()
    .meta({ description: `ms, or a duration such as "5s" or "1h", from ${range}${extra}; null: the default` });

/** What `Redeliver.endpoint(E).set` takes, checked by its own code (checkSettingsChange) so that each problem names its field. */
export const endpointSettingsBody = z
  .object({
    maxInFlight: z
      .union([z.number().int(), z.literal('off'), z.null()])
      .optional()
      .meta({ description: 'attempts in flight at once, all workers together, 1 to 100000; "off": none; null: the workers\' default' }),
    rate: z.union([z.number(), z.string(), z.null()]).optional().meta({
      description:
        'attempts per second, all workers together: 200, "200/s", "12000/min" (above 0, at most 1000000); "off": none; null: the workers\' default',
    }),
    breaker: z
      .enum(['on', 'off'])
      .nullable()
      .optional()
      .meta({ description: 'the circuit breaker: while the endpoint is failing, one probe at a time; null: the default, off' }),
    probeEvery: durationOrMs('100 ms to 1 h', ': while the breaker is open, at most one probe per this long (default 1 s)'),
    autoDisableAfter: durationOrMs('1 min to 90 days, or "off"', ': disable the endpoint once it has been failing this long (default off)'),
    priority: z.enum(['deadline-first', 'fifo']).nullable().optional().meta({
      description:
        'who goes first when the limits make slots scarce: command responses, then events, then telemetry (deadline-first), or arrival order (fifo); null: the default, deadline-first',
    }),
    outage: z.enum(['hold', 'off']).nullable().optional().meta({
      description:
        "while the endpoint fails, a batch's messages wait in an outage hold and are released at the recovery pace (hold), or each becomes a delivery of its own (off); null: the workers' default (REDELIVER_OUTAGE_HOLD, on)",
    }),
  })
  .strict()
  .meta({
    id: 'EndpointSettingsChange',
    description: 'A JSON merge patch of the settings: a field given sets it, null gives it back to the default, a field left out stays.',
  });
// the body is the client API's EndpointSettingsInput, both ways (that type stays zod-free: workflow code reads it)
type _BodyIsSettingsInput = Assignable<z.output<typeof endpointSettingsBody>, EndpointSettingsInput>;
type _SettingsInputIsBody = Assignable<EndpointSettingsInput, z.input<typeof endpointSettingsBody>>;

export const endpointReasonBody = z
  .object({ reason: z.string().max(500).optional().meta({ description: 'why, shown in the reason of every delivery it holds or ends' }) })
  .strict()
  .optional();

export const reasonBody = z
  .object({ reason: z.string().max(1000).optional().meta({ description: 'why, shown in status and the UI' }) })
  .strict()
  .optional();

export const deliveryInput = deliveryInputSchema.meta({
  id: 'DeliveryInput',
  description: 'A delivery, as the client API\'s `submit` takes it (docs/deliveries.md, "A delivery\'s fields").',
});
export const submitBody = z.union([deliveryInput, z.array(deliveryInput)]);
export const subscriptionInput = subscriptionInputSchema.meta({
  id: 'SubscriptionInput',
  description: 'A command subscription, as `Subscriptions.start` takes it (docs/mqtt.md, "Command subscriptions").',
});

export const acceptedSchema = z
  .object({ deliveryId: z.string(), created: z.boolean().meta({ description: 'false: it existed (the same message id)' }) })
  .meta({ id: 'Accepted' });
export const acceptedInBatchSchema = z
  .object({ deliveryId: z.string(), batchId: z.string().meta({ description: 'the batch that makes its first attempt' }) })
  .meta({ id: 'AcceptedInBatch' });
export const submitResponse = z.union([acceptedSchema, z.array(acceptedInBatchSchema)]);

const attemptRecord = z
  .object({
    attempt: z.number().int(),
    startedAt: z.string(),
    durationMs: z.number(),
    code: z.string(),
    ok: z.boolean(),
    class: z
      .enum([...CLASSES, 'success'])
      .optional()
      .meta({ description: "the classifier's verdict" }),
    answer: z.string().optional().meta({ description: "the endpoint's answer, in the classifier's words (quoting the server)" }),
    retryAfterMs: z.number().optional().meta({ description: 'the wait the server asked for (Retry-After), in ms' }),
  })
  .meta({ id: 'AttemptRecord' });
const attemptError = z
  .object({ class: z.enum(CLASSES), code: z.string(), reason: z.string(), attempt: z.number().int(), at: z.string() })
  .meta({ id: 'AttemptError' });
const encrypted = z.object({ keyId: z.string().nullable() }).optional();
const time = z.string().nullable();

export const statusSchema = z
  .object({
    deliveryId: z.string(),
    messageId: z.string(),
    kind: z.enum(KINDS),
    qos: z.literal([0, 1]).nullable(),
    tenant: z.string(),
    device: z.string(),
    endpoint: z.string(),
    state: z.enum(STATES),
    attempts: z.number().int(),
    firstAttemptAt: time,
    lastAttemptAt: time,
    nextAttemptAt: time,
    lastError: attemptError.nullable(),
    attemptLog: z.array(attemptRecord),
    summary: z.string(),
    policy: z.string().optional().meta({ description: 'its retry policy in words, where the reader knows it' }),
    pause: z.object({ reason: z.string(), since: z.string() }).nullable(),
    ordering: z
      .object({
        key: z.string(),
        admitted: z.boolean(),
        behind: z.string().nullable().meta({ description: 'while queued: the delivery it waits for' }),
        blockedBy: z.object({ deliveryId: z.string(), outcome: z.enum(OUTCOMES) }).nullable(),
      })
      .optional()
      .meta({ description: 'ordered deliveries only (docs/ordering.md)' }),
    hold: z
      .object({ holdId: z.string() })
      .optional()
      .meta({ description: 'a message that waits in an outage hold, not in a delivery of its own (docs/endpoint-health.md, "Outages")' }),
    batch: z
      .object({ batchId: z.string(), workflowId: z.string() })
      .optional()
      .meta({ description: 'the batch it came in, when it came in one (docs/batches.md, "Finding a message by its id")' }),
    encrypted,
  })
  .meta({ id: 'DeliveryStatus', description: 'What `redeliver status --json` prints.' });

export const resultSchema = z
  .object({
    deliveryId: z.string(),
    messageId: z.string(),
    outcome: z.enum(OUTCOMES),
    attempts: z.number().int(),
    firstAttemptAt: time,
    lastAttemptAt: time,
    lastError: attemptError.nullable(),
    reason: z.string(),
    attemptLog: z.array(attemptRecord).optional().meta({ description: 'its last attempts, at most 20' }),
    policy: z.string().optional().meta({ description: 'its retry policy in words' }),
    message: z
      .object({
        deliveryId: z.string(),
        tenant: z.string(),
        device: z.string(),
        target: z.unknown(),
        body: z.string(),
        contentType: z.string(),
      })
      .optional()
      .meta({ description: 'the whole delivery (target, body, policy, …), kept for redrive' }),
    encrypted,
  })
  .meta({ id: 'DeadLetter', description: 'What `redeliver dead-letters show --json` prints.' });

const summarySchema = z
  .object({
    deliveryId: z.string(),
    runId: z.string(),
    state: z.string(),
    kind: z.string().optional(),
    tenant: z.string().optional(),
    device: z.string().optional(),
    endpoint: z.string().optional(),
    attempts: z.number().int().optional(),
    lastErrorClass: z.string().optional(),
    startedAt: z.string(),
    closedAt: time,
    encrypted: z.literal(true).optional(),
  })
  .meta({ id: 'DeliverySummary', description: 'One row of `redeliver list --json`.' });

export const pageSchema = z
  .object({ deliveries: z.array(summarySchema), nextCursor: z.string().nullable().meta({ description: 'null on the last page' }) })
  .meta({ id: 'DeliveryPage' });

export const redrivenSchema = z
  .object({ deliveryId: z.string(), redriven: z.boolean().meta({ description: 'false: it was redriven already, or is running again' }) })
  .meta({ id: 'Redriven' });

export const jobSchema = z
  .object({
    jobId: z.string(),
    state: z.enum(['running', 'done', 'stopped']).meta({ description: 'stopped: the server shut down before it was done' }),
    startedAt: z.string(),
    finishedAt: time,
    total: z.number().int().nullable().meta({ description: 'dead letters found; null while they are being listed' }),
    done: z.number().int(),
    redriven: z.array(z.string()),
    alreadyRedriven: z.array(z.string()),
    failed: z.array(z.object({ deliveryId: z.string(), error: z.string() })),
  })
  .meta({
    id: 'RedriveJob',
    description: 'A bulk redrive, kept in the memory of the server that runs it (docs/http-api.md, "A long bulk redrive is a job").',
  });

const paceView = {
  state: z.enum(['healthy', 'failing', 'recovering']),
  window: z.number().int().meta({ description: 'sends in flight allowed now; 0 while failing (one probe at a time)' }),
  inFlight: z.number().int(),
  cap: z.number().int().meta({ description: "the window's cap: the endpoint's max-in-flight share, or the worker's" }),
  why: z.string().meta({ description: 'why the window is what it is, in words' }),
};
const paceSchema = z
  .object({
    ...paceView,
    workers: z.record(z.string(), z.object({ ...paceView, changedAt: z.number().meta({ description: 'epoch ms' }) })),
  })
  .optional()
  .meta({
    id: 'EndpointPace',
    description:
      'The recovery pace of outage holds (docs/endpoint-health.md): the workers that reported one in the last 10 s merged (the worst state, windows summed), and each; absent when none did.',
  });

export const endpointsSchema = z.array(
  z
    .object({
      endpoint: z.string(),
      state: z.enum(['healthy', 'failing', 'recovering']),
      failureRate: z.number(),
      attemptsLastMinute: z.number(),
      heldBackLastMinute: z.number(),
      workers: z.number(),
      downtimeMs: z.number(),
      downtimePeriods: z.number(),
      summary: z.string(),
      pace: paceSchema,
      waiting: z.number().int().meta({ description: "this key's deliveries to it not ended yet" }),
    })
    .meta({ id: 'Endpoint', description: 'What `redeliver endpoints --json` prints, one per endpoint.' }),
);

const nextCursor = z.string().nullable().meta({ description: 'null on the last page' });
export const endpointPageSchema = z.object({ endpoints: endpointsSchema, nextCursor }).meta({ id: 'EndpointPage' });

export const endpointControlSchema = z
  .object({
    endpoint: z.string().meta({ description: 'host[:port]' }),
    settings: z
      .object({
        maxInFlight: z.union([z.number().int(), z.literal('off')]).optional(),
        rate: z
          .union([z.number(), z.literal('off')])
          .optional()
          .meta({ description: 'attempts per second' }),
        breaker: z.enum(['on', 'off']).optional(),
        probeEvery: z.number().optional().meta({ description: 'ms' }),
        autoDisableAfter: z
          .union([z.number(), z.literal('off')])
          .optional()
          .meta({ description: 'ms' }),
        priority: z.enum(['deadline-first', 'fifo']).optional(),
        outage: z.enum(['hold', 'off']).optional(),
      })
      .meta({ description: "the endpoint's own settings; a field left out: the workers' default" }),
    mode: z
      .object({
        state: z.enum(['paused', 'disabled']),
        reason: z.string(),
        since: z.number().meta({ description: 'epoch ms' }),
        by: z.enum(['operator', 'auto']).meta({ description: 'auto: disabled by itself, after failing for autoDisableAfter' }),
      })
      .optional()
      .meta({ description: 'absent: active' }),
    breaker: z
      .object({ open: z.boolean(), since: z.number().nullable().meta({ description: 'epoch ms' }), prober: z.string().nullable() })
      .optional()
      .meta({ description: 'present while the breaker is open: the endpoint is failing, one probe at a time' }),
    pace: paceSchema,
  })
  .meta({ id: 'EndpointControl', description: 'What `redeliver endpoint show --json` prints: what every worker applies to the endpoint.' });

export const downtimeSchema = z.array(
  z
    .object({
      endpoint: z.string(),
      report: z.object({
        since: z.string(),
        totalMs: z.number(),
        periods: z.array(z.object({ from: z.string(), to: z.string(), durationMs: z.number(), attempts: z.number() })),
      }),
    })
    .meta({ id: 'EndpointDowntime', description: 'What `redeliver downtime --json` prints, one per endpoint.' }),
);

export const downtimePageSchema = z.object({ downtime: downtimeSchema, nextCursor }).meta({ id: 'DowntimePage' });

export const subscriptionStartedSchema = z
  .object({
    subscriptionId: z.string(),
    created: z.boolean().meta({ description: 'false: it was running already, with this configuration' }),
  })
  .meta({ id: 'SubscriptionStarted' });
export const subscriptionStatusSchema = z
  .object({ subscriptionId: z.string(), tenant: z.string(), device: z.string(), state: z.string(), summary: z.string() })
  .meta({ id: 'SubscriptionStatus', description: 'What `redeliver subscribe status --json` prints.' });
export const subscriptionResultSchema = z
  .object({ subscriptionId: z.string(), outcome: z.string(), reason: z.string() })
  .meta({ id: 'SubscriptionResult', description: 'What `redeliver subscribe stop --json` prints.' });

export const healthSchema = z
  .object({ status: z.enum(['ok', 'unavailable', 'stopping']), temporal: z.enum(['reachable', 'unreachable']) })
  .meta({ id: 'Health' });
