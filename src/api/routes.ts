import type { z } from 'zod';
import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { batchBounds, planBatches } from '../batching/batches';
import type { EndpointView, Redeliver } from '../client/index';
import { DEAD_LETTER_STATES, OPEN_STATES, type DeadLetterState, type DeliveryFilter } from '../delivery/filter';
import type { EndpointHandle } from '../client/endpoint-handle';
import type { EndpointControl, EndpointSettingsInput } from '../endpoints/controls';
import type { DeliveryInput } from '../delivery/types';
import type { SubscriptionInput } from '../subscription/types';
import type { Subscriptions } from '../client/subscriptions';
import { subscriptionIdFrom } from '../client/subscriptions';
import { filterFrom, timeFrom, type FilterInput } from '../validation/filter';
import { InvalidInputError, type Problem } from '../errors';
import { DeliveryState } from '../contract';
import type { RedriveJobs } from './jobs';
import { ALL_TENANTS, holdsTenant, type ApiKey, type Role } from './keys';
import { HttpProblem, notFound, UNAVAILABLE_RETRY_AFTER_S } from './problems';
import * as s from './schemas';

/** What a route's handler works with. */
export interface ApiContext {
  redeliver: Redeliver;
  subscriptions: Subscriptions;
  jobs: RedriveJobs;
  /** How long a change to an endpoint's controls waits for a worker to apply it before the answer is 503. */
  endpointChangeWaitMs: number;
}

export interface Call<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  key: ApiKey;
  api: ApiContext;
}

/**
 * One route: what the server serves and what the OpenAPI document says of it, from the same schemas. The
 * handler's result must fit the success schema (the types check it).
 */
export interface Route<P = unknown, Q = unknown, B = unknown, R = unknown> {
  method: 'GET' | 'POST' | 'PATCH';
  /** OpenAPI's form: `/v1/deliveries/{deliveryId}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The role a key needs. */
  role: Role;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** The body is checked by the handler, with the client API's whole validation (every problem, not only the shape). */
  bodyCheckedByHandler?: true;
  success: { status: 200 | 202; description: string; schema: z.ZodType<R> };
  /**
   * OpenAPI links from the success answer to the operations that take what it names (a client or a stateful fuzzer
   * chains a submit to the reads and controls of what it created): by link name, the operation and where each of its
   * parameters comes from (a runtime expression, `$response.body#/deliveryId`).
   */
  links?: Record<string, { operationId: string; parameters: Record<string, string> }>;
  /** Error statuses this route answers besides those every route may (401, 403, 429, 503) and its body's and path's (413, 415, 414: openApiDocument). */
  errors: readonly number[];
  /** A curl command for the API reference (docs/http-api.md). */
  example: string;
  handle(call: Call<P, Q, B>): Promise<NoInfer<R>>;
}

// checks the handler against the schemas, then forgets the types: the server and the document take any route
const route = <P, Q, B, R>(r: Route<P, Q, B, R>): Route => r as unknown as Route;

const CURL = 'curl -s -H "Authorization: Bearer $KEY"';

/** The links to a delivery's read and controls, its id taken from where an answer holds it. */
const deliveryLinks = (from: string, ops: readonly string[]) =>
  Object.fromEntries(ops.map((operationId) => [operationId, { operationId, parameters: { deliveryId: from } }]));
const DELIVERY_OPS = ['getDelivery', 'retryNowDelivery', 'pauseDelivery', 'resumeDelivery', 'cancelDelivery'] as const;
const DEAD_LETTER_OPS = ['getDeadLetter', 'redrive'] as const;
/** The links to an endpoint's read, settings and modes. */
const endpointLinks = (from: string) =>
  Object.fromEntries(
    ['getEndpoint', 'setEndpoint', 'pauseEndpoint', 'resumeEndpoint', 'disableEndpoint', 'enableEndpoint'].map((operationId) => [
      operationId,
      { operationId, parameters: { endpoint: from } },
    ]),
  );
/** The id the example of an operation names, URL-encoded (s.EXAMPLE_IDS). */
const exampleId = (operationId: keyof typeof s.EXAMPLE_IDS) => encodeURIComponent(s.EXAMPLE_IDS[operationId]);
const SUBSCRIPTION_ID = exampleId('subscription');

/** A delivery of one of the key's tenants, by id; 404 for any other (another tenant's is not told apart from none). */
function ownDelivery(key: ApiKey, api: ApiContext, deliveryId: string) {
  const [prefix, tenant, device, messageId, ...rest] = deliveryId.split('/');
  if (prefix !== 'delivery' || !tenant || !device || !messageId || rest.length || !holdsTenant(key, tenant)) throw notFound('delivery');
  return api.redeliver.getHandle(deliveryId);
}

function ownSubscription(key: ApiKey, api: ApiContext, id: string) {
  const [, tenant, device, ...rest] = subscriptionIdFrom(id).split('/');
  if (!tenant || !device || rest.length || !holdsTenant(key, tenant)) throw notFound('subscription');
  return api.subscriptions.getHandle(id);
}

/** 403 naming each input whose tenant the key does not hold (a tenant that is no string is left to validation). */
function requireTenants(key: ApiKey, inputs: readonly unknown[], field: (i: number) => string): void {
  const problems: Problem[] = [];
  inputs.forEach((input, i) => {
    const tenant = (input as { tenant?: unknown } | null)?.tenant;
    if (typeof tenant === 'string' && !holdsTenant(key, tenant))
      problems.push({ field: field(i), message: `this key does not hold tenant ${tenant}` });
  });
  if (problems.length) throw new HttpProblem(403, problems.map((p) => `${p.field}: ${p.message}`).join('; '), { problems });
}

/** The filter narrowed to the key's tenants, in the visibility query itself: a page never holds another tenant's delivery. */
function scoped(key: ApiKey, input: FilterInput, states?: readonly string[]): DeliveryFilter {
  const filter = filterFrom(input, { ...(states && { states }) });
  if (key.tenants === ALL_TENANTS) return filter;
  if (typeof filter.tenant === 'string') {
    requireTenants(key, [filter], () => 'tenant');
    return filter;
  }
  return { ...filter, tenant: [...key.tenants] };
}

/** The endpoints a key's tenants send to, with their deliveries waiting on each (a `*` key: every endpoint, every delivery). */
/**
 * A page of the endpoints the key's tenants send to: just `endpoint` when given, else at most `limit` of every
 * endpoint's workflows (fewer when the key does not see some: follow `nextCursor` until null).
 */
async function endpointsPage(key: ApiKey, api: ApiContext, query: z.output<typeof s.endpointQuery>) {
  const page = query.endpoint
    ? { endpoints: await api.redeliver.endpoints(query.endpoint), nextCursor: null }
    : await api.redeliver.endpointsPage({
        pageSize: query.limit ?? s.ENDPOINTS_PAGE.fallback,
        ...(query.cursor && { cursor: query.cursor }),
      });
  return { endpoints: await visibleEndpoints(key, api, page.endpoints), nextCursor: page.nextCursor };
}

/** Of `views`, those the key's tenants send to, with the deliveries of theirs that wait on each. */
async function visibleEndpoints(key: ApiKey, api: ApiContext, views: EndpointView[]): Promise<EndpointView[]> {
  if (key.tenants === ALL_TENANTS) return views;
  const tenant = [...key.tenants];
  const mine = await Promise.all(
    views.map(async (view) => {
      const used = await api.redeliver.sendsTo(view.endpoint, tenant);
      return used ? { ...view, waiting: await api.redeliver.count({ endpoint: view.endpoint, tenant, state: [...OPEN_STATES] }) } : null;
    }),
  );
  return mine.filter((v): v is EndpointView => v !== null);
}

async function submit({ body, key, api }: Call<unknown, unknown, unknown>) {
  if (!Array.isArray(body)) {
    requireTenants(key, [body], () => 'tenant');
    const handle = await api.redeliver.submit(body as DeliveryInput);
    return { deliveryId: handle.deliveryId, created: handle.created };
  }
  requireTenants(key, body, (i) => `[${i}].tenant`);
  // validated here, so that the answer names each input's delivery, in order (an id left out comes from its contents)
  const deliveries = api.redeliver.validateSet(body);
  const planned = planBatches(deliveries, batchBounds({}));
  await api.redeliver.startBatches(planned);
  const batchOf = new Map(planned.flatMap((b) => b.deliveries.map((d) => [d.deliveryId, b.batchId] as const)));
  return deliveries.map(({ deliveryId }) => ({ deliveryId, batchId: batchOf.get(deliveryId)! }));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

async function deadLetter({ params, key, api }: Call<{ deliveryId: string }, unknown, unknown>) {
  const handle = ownDelivery(key, api, params.deliveryId);
  const description = await handle.workflow.describe();
  const state = description.typedSearchAttributes.get(DeliveryState) ?? description.status.name.toLowerCase();
  if (description.status.name === 'RUNNING' || !DEAD_LETTER_STATES.includes(state as DeadLetterState))
    throw new HttpProblem(404, `${params.deliveryId} is not a dead letter: it is ${state}`);
  return handle.result();
}

const CONTROL_OPERATIONS = {
  'retry-now': 'retryNowDelivery',
  pause: 'pauseDelivery',
  resume: 'resumeDelivery',
  cancel: 'cancelDelivery',
} as const;

const control = (name: keyof typeof CONTROL_OPERATIONS, summary: string) => {
  const operationId = CONTROL_OPERATIONS[name];
  return route({
    method: 'POST',
    path: `/v1/deliveries/{deliveryId}/${name}`,
    operationId,
    summary,
    role: 'operate',
    params: s.deliveryIdParams(s.EXAMPLE_IDS[operationId]),
    ...(name === 'pause' && { body: s.reasonBody }),
    success: { status: 200, description: 'the delivery, after the control', schema: s.statusSchema },
    // a paused delivery's answer leads to its resume
    ...(name === 'pause' && { links: deliveryLinks('$response.body#/deliveryId', ['resumeDelivery', 'getDelivery', 'cancelDelivery']) }),
    errors: [400, 404, 409],
    example: `${CURL} -X POST ${name === 'pause' ? `-H 'Content-Type: application/json' -d '{"reason":"maintenance"}' ` : ''}$API/v1/deliveries/${exampleId(operationId)}/${name}`,
    handle: async ({ params, body, key, api }) => {
      const handle = ownDelivery(key, api, params.deliveryId);
      if (name === 'retry-now') return handle.retryNow();
      if (name === 'pause') return handle.pause((body as z.output<typeof s.reasonBody>)?.reason ?? '');
      if (name === 'resume') return handle.resume();
      return handle.cancel();
    },
  });
};

/** An endpoint the key may see: any for a `*` key, else one its tenants send to; 404 for any other. */
async function readableEndpoint(key: ApiKey, api: ApiContext, endpoint: string): Promise<EndpointHandle> {
  const handle = api.redeliver.endpoint(endpoint);
  if (key.tenants !== ALL_TENANTS && !(await api.redeliver.sendsTo(handle.endpoint, [...key.tenants])))
    throw new HttpProblem(404, `no delivery of this key's tenants goes to ${handle.endpoint}`);
  return handle;
}

/** How long a change waits for a worker to apply it (the endpoint's workflow runs on the workers) before the answer is 503. */
export const ENDPOINT_CHANGE_WAIT_MS = 10_000;

/**
 * A change to an endpoint's controls, answered with the control every worker now reads. It holds every tenant's
 * deliveries to the endpoint, so it takes a key for every tenant.
 */
async function changeEndpoint(
  key: ApiKey,
  api: ApiContext,
  endpoint: string,
  change: (handle: EndpointHandle) => Promise<EndpointControl>,
) {
  const handle = api.redeliver.endpoint(endpoint);
  if (key.tenants !== ALL_TENANTS)
    throw new HttpProblem(403, `a change to ${handle.endpoint} holds every tenant's deliveries to it: it takes a key of tenants ["*"]`);
  try {
    const control = await api.redeliver.client.withDeadline(Date.now() + api.endpointChangeWaitMs, () => change(handle));
    return { endpoint: handle.endpoint, ...control };
  } catch (err) {
    if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) throw err;
    // sent, not refused: the endpoint's workflow applies it once a worker runs it, unless the server loses it first
    const detail =
      `no worker of task queue ${api.redeliver.taskQueue} applied the change to ${handle.endpoint} within ` +
      `${api.endpointChangeWaitMs / 1000} s: is one running? It may still apply; GET /v1/endpoints/{endpoint} shows what holds`;
    throw new HttpProblem(503, detail, { headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) } });
  }
}

const ENDPOINT_EXAMPLE = '$API/v1/endpoints/ingest.example.com';

/** A change of the endpoint's mode; `reason`: it takes one (`{"reason"}`), this in its example. */
const endpointMode = (name: 'pause' | 'resume' | 'disable' | 'enable', summary: string, reason?: string) =>
  route({
    method: 'POST',
    path: `/v1/endpoints/{endpoint}/${name}`,
    operationId: `${name}Endpoint`,
    summary,
    role: 'operate',
    params: s.endpointParams,
    ...(reason !== undefined && { body: s.endpointReasonBody }),
    success: { status: 200, description: "the endpoint's control, as every worker now reads it", schema: s.endpointControlSchema },
    errors: [400],
    example: `${CURL} -X POST ${reason ? `-H 'Content-Type: application/json' -d '{"reason":"${reason}"}' ` : ''}${ENDPOINT_EXAMPLE}/${name}`,
    handle: ({ params, body, key, api }) =>
      changeEndpoint(key, api, params.endpoint, (handle) => {
        const given = (body as z.output<typeof s.endpointReasonBody>)?.reason;
        return name === 'pause' || name === 'disable' ? handle[name](given) : handle[name]();
      }),
  });

const ENDPOINT_ROUTES = [
  route({
    method: 'GET',
    path: '/v1/endpoints/{endpoint}',
    operationId: 'getEndpoint',
    summary: "An endpoint's control: its own settings, its mode and its breaker, as every worker applies them",
    description:
      "What `redeliver endpoint show --json` prints. A key of some tenants sees the endpoints they send to; `GET /v1/endpoints` has the endpoint's health figures.",
    role: 'read',
    params: s.endpointParams,
    success: { status: 200, description: 'its control', schema: s.endpointControlSchema },
    links: endpointLinks('$response.body#/endpoint'),
    errors: [400, 404],
    example: `${CURL} ${ENDPOINT_EXAMPLE}`,
    handle: async ({ params, key, api }) => {
      const handle = await readableEndpoint(key, api, params.endpoint);
      const [control, pace] = await Promise.all([handle.control(), handle.pace()]);
      return { endpoint: handle.endpoint, ...control, ...(pace && { pace }) };
    },
  }),
  route({
    method: 'PATCH',
    path: '/v1/endpoints/{endpoint}/settings',
    operationId: 'setEndpoint',
    summary: "Set an endpoint's limits, breaker and auto-disable, over every attempt to it from all workers",
    description:
      'A JSON merge patch, as `redeliver endpoint set` (a field given sets it, null gives it back to the default, a field ' +
      "left out stays). Answers 2 s after the endpoint's workflow holds it, when every worker's older copy has expired: every attempt that starts after the answer obeys it. Takes a key of " +
      `tenants \`["*"]\`: the endpoint is every tenant's. 503 when no worker applied it within ${ENDPOINT_CHANGE_WAIT_MS / 1000} s.`,
    role: 'operate',
    params: s.endpointParams,
    body: s.endpointSettingsBody,
    bodyCheckedByHandler: true,
    success: { status: 200, description: "the endpoint's control, as every worker now reads it", schema: s.endpointControlSchema },
    errors: [400],
    example: `${CURL} -X PATCH -H 'Content-Type: application/json' -d '{"maxInFlight":50,"rate":"200/s"}' ${ENDPOINT_EXAMPLE}/settings`,
    handle: ({ params, body, key, api }) => {
      if (!isObject(body) || Object.keys(body).length === 0) {
        const message = `must be an object of at least one of ${Object.keys(s.endpointSettingsBody.shape).join(', ')}`;
        throw new InvalidInputError([{ field: '(body)', message }], '(body)');
      }
      return changeEndpoint(key, api, params.endpoint, (handle) => handle.set(body as EndpointSettingsInput));
    },
  }),
  endpointMode('pause', 'Pause an endpoint: every attempt to it is held, none sent, until resumed (max ages run on)', 'maintenance'),
  endpointMode('resume', 'Resume an endpoint after a pause or a disable: held deliveries go within 30 s'),
  endpointMode('disable', 'Disable an endpoint: every attempt to it ends its delivery as a dead letter (rejected) saying so', 'retired'),
  endpointMode('enable', 'Enable an endpoint again: the same as resume; redrive what it dead-lettered'),
];

const page = async (
  key: ApiKey,
  api: ApiContext,
  query: z.output<typeof s.listQuery | typeof s.deadLetterQuery>,
  states?: readonly string[],
) => {
  const filter = scoped(key, query, states);
  return api.redeliver.listPage(states ? { state: [...DEAD_LETTER_STATES], ...filter } : filter, {
    pageSize: query.limit ?? 100,
    ...(query.cursor && { cursor: query.cursor }),
  });
};

/** How the endpoints' listings page, as `GET /v1/deliveries` does. */
const PAGED =
  'A page at a time: at most `limit` endpoints (default 50, at most 100), each asked at once, so that a page answers as ' +
  'fast with ten endpoints as with thousands; pass `nextCursor` back as `cursor` until it is null. A key of some ' +
  'tenants may get fewer than `limit` on a page (the endpoints its tenants do not send to are left out).';

export const ROUTES: readonly Route[] = [
  route({
    method: 'POST',
    path: '/v1/deliveries',
    operationId: 'submit',
    summary: 'Submit a delivery, or an array of them (in batches)',
    description:
      'One delivery: started as its own workflow, idempotent by message id (the same message again answers the existing ' +
      'delivery, `created: false`; another message under the same id is 409 naming `messageId`). An array takes the ' +
      "batch path (docs/batches.md): each message's id, in order, and the batch that makes its first attempt (a missing " +
      "id comes from the message's contents: the same array POSTed again sends nothing again). Every " +
      'input is checked before anything starts: 400 lists every wrong field.',
    role: 'produce',
    body: s.submitBody,
    bodyCheckedByHandler: true,
    success: { status: 202, description: 'accepted: durably started', schema: s.submitResponse },
    // one delivery's answer names it (an array's answer has no such field: its links resolve to nothing)
    links: deliveryLinks('$response.body#/deliveryId', DELIVERY_OPS),
    errors: [400, 409],
    example: `${CURL} -H 'Content-Type: application/json' -d '{"kind":"event","tenant":"acme","device":"sensor-1","messageId":"msg-42","target":"https://ingest.example.com/events","payload":{"temperature":21.5}}' $API/v1/deliveries`,
    handle: submit,
  }),
  route({
    method: 'GET',
    path: '/v1/deliveries',
    operationId: 'listDeliveries',
    summary: "List deliveries by the CLI's filters, newest first, a page at a time",
    role: 'read',
    query: s.listQuery,
    success: { status: 200, description: "a page of the key's deliveries", schema: s.pageSchema },
    links: deliveryLinks('$response.body#/deliveries/0/deliveryId', DELIVERY_OPS),
    errors: [400],
    example: `${CURL} "$API/v1/deliveries?state=waiting,paused&since=1h&limit=50"`,
    handle: ({ query, key, api }) => page(key, api, query),
  }),
  route({
    method: 'GET',
    path: '/v1/deliveries/{deliveryId}',
    operationId: 'getDelivery',
    summary: "A delivery's status: what `redeliver status --json` prints",
    role: 'read',
    params: s.deliveryIdParams(s.EXAMPLE_IDS.getDelivery),
    success: { status: 200, description: 'its status', schema: s.statusSchema },
    errors: [404],
    example: `${CURL} $API/v1/deliveries/${exampleId('getDelivery')}`,
    handle: ({ params, key, api }) => ownDelivery(key, api, params.deliveryId).status(),
  }),
  control('retry-now', 'End the current wait: the next attempt starts now'),
  control('pause', 'Pause: no further attempt until resumed'),
  control('resume', 'Resume a paused delivery'),
  control('cancel', 'Cancel: no further attempt; answers once it has ended (an attempt in flight finishes first)'),
  route({
    method: 'GET',
    path: '/v1/dead-letters',
    operationId: 'listDeadLetters',
    summary: 'List dead letters (rejected, expired, exhausted, dropped), newest first',
    role: 'read',
    query: s.deadLetterQuery,
    success: { status: 200, description: "a page of the key's dead letters", schema: s.pageSchema },
    links: deliveryLinks('$response.body#/deliveries/0/deliveryId', DEAD_LETTER_OPS),
    errors: [400],
    example: `${CURL} "$API/v1/dead-letters?errorClass=client&since=24h"`,
    handle: ({ query, key, api }) => page(key, api, query, DEAD_LETTER_STATES),
  }),
  route({
    method: 'GET',
    path: '/v1/dead-letters/{deliveryId}',
    operationId: 'getDeadLetter',
    summary: 'One dead letter: its message, last error, attempts and times',
    role: 'read',
    params: s.deliveryIdParams(s.EXAMPLE_IDS.getDeadLetter),
    success: { status: 200, description: 'the dead letter', schema: s.resultSchema },
    links: deliveryLinks('$response.body#/deliveryId', ['redrive']),
    errors: [404],
    example: `${CURL} $API/v1/dead-letters/${exampleId('getDeadLetter')}`,
    handle: deadLetter,
  }),
  route({
    method: 'POST',
    path: '/v1/dead-letters/{deliveryId}/redrive',
    operationId: 'redrive',
    summary: 'Redrive a dead letter: a new run of the same delivery id, with the same message',
    role: 'operate',
    params: s.deliveryIdParams(s.EXAMPLE_IDS.redrive),
    success: { status: 202, description: 'started again (or already)', schema: s.redrivenSchema },
    links: deliveryLinks('$response.body#/deliveryId', DELIVERY_OPS),
    errors: [404, 409],
    example: `${CURL} -X POST $API/v1/dead-letters/${exampleId('redrive')}/redrive`,
    handle: async ({ params, key, api }) => {
      ownDelivery(key, api, params.deliveryId);
      const handle = await api.redeliver.redrive(params.deliveryId);
      return { deliveryId: params.deliveryId, redriven: handle.created };
    },
  }),
  route({
    method: 'POST',
    path: '/v1/redrives',
    operationId: 'redriveAll',
    summary: 'Redrive every dead letter matching a filter, as a job to poll',
    description:
      'Answers at once with the job; `GET /v1/redrives/{jobId}` follows it. Jobs live in the memory of the server ' +
      'that runs them: a restart forgets them (404) and stops those running; starting the same redrive again is safe.',
    role: 'operate',
    body: s.redriveAllBody,
    success: { status: 202, description: 'the job, just started', schema: s.jobSchema },
    links: { getRedrive: { operationId: 'getRedrive', parameters: { jobId: '$response.body#/jobId' } } },
    errors: [400],
    example: `${CURL} -H 'Content-Type: application/json' -d '{"state":"expired,exhausted","endpoint":"ingest.example.com"}' $API/v1/redrives`,
    handle: async ({ body, key, api }) => {
      const { concurrency, ...filter } = body;
      return api.jobs.start(scoped(key, filter, DEAD_LETTER_STATES), key.tenants, concurrency);
    },
  }),
  route({
    method: 'GET',
    path: '/v1/redrives/{jobId}',
    operationId: 'getRedrive',
    summary: 'A bulk redrive: how far it got, and what it did with each dead letter',
    role: 'read',
    params: s.jobIdParams,
    success: { status: 200, description: 'the job', schema: s.jobSchema },
    errors: [404],
    example: `${CURL} $API/v1/redrives/$JOB`,
    handle: async ({ params, key, api }) => {
      const mine = (scope: ApiKey['tenants']) => scope !== ALL_TENANTS && scope.every((t) => holdsTenant(key, t));
      const job = api.jobs.get(params.jobId, (scope) => key.tenants === ALL_TENANTS || mine(scope));
      if (!job) throw notFound('redrive job');
      return job;
    },
  }),
  route({
    method: 'GET',
    path: '/v1/endpoints',
    operationId: 'listEndpoints',
    summary: "Endpoints' health, and this key's deliveries waiting on each",
    description: "Only endpoints the key's tenants send to. Health figures are the endpoint's own, from every tenant's attempts. " + PAGED,
    role: 'read',
    query: s.endpointQuery,
    success: { status: 200, description: 'a page of the endpoints', schema: s.endpointPageSchema },
    links: endpointLinks('$response.body#/endpoints/0/endpoint'),
    errors: [400],
    example: `${CURL} "$API/v1/endpoints?limit=50"`,
    handle: ({ query, key, api }) => endpointsPage(key, api, query),
  }),
  ...ENDPOINT_ROUTES,
  route({
    method: 'GET',
    path: '/v1/downtime',
    operationId: 'getDowntime',
    summary: "Downtime per endpoint, as the retry guide defines it (the key's endpoints)",
    description: PAGED,
    role: 'read',
    query: s.downtimeQuery,
    success: { status: 200, description: "a page of the endpoints' downtime reports", schema: s.downtimePageSchema },
    errors: [400],
    example: `${CURL} "$API/v1/downtime?since=24h&limit=50"`,
    handle: async ({ query, key, api }) => {
      const problems: Problem[] = [];
      const since = timeFrom('since', query.since, problems);
      if (problems.length) throw new InvalidInputError(problems, 'query');
      const page = await endpointsPage(key, api, query);
      const reports = await Promise.all(page.endpoints.map((e) => api.redeliver.endpointDowntime(e.endpoint, since)));
      return { downtime: reports, nextCursor: page.nextCursor };
    },
  }),
  route({
    method: 'POST',
    path: '/v1/subscriptions',
    operationId: 'startSubscription',
    summary: "Start (or find running) a device's command subscription",
    role: 'operate',
    body: s.subscriptionInput,
    bodyCheckedByHandler: true,
    success: { status: 202, description: 'started, or running already', schema: s.subscriptionStartedSchema },
    links: Object.fromEntries(
      ['getSubscription', 'stopSubscription'].map((operationId) => [
        operationId,
        { operationId, parameters: { subscriptionId: '$response.body#/subscriptionId' } },
      ]),
    ),
    errors: [400, 409],
    example: `${CURL} -H 'Content-Type: application/json' -d '{"tenant":"acme","device":"sensor-1","broker":{"url":"mqtts://hub.example.com:8883","credential":"hub-acme"},"callback":"https://app.example.com/commands"}' $API/v1/subscriptions`,
    handle: async ({ body, key, api }) => {
      requireTenants(key, [body], () => 'tenant');
      const handle = await api.subscriptions.start(body as SubscriptionInput);
      return { subscriptionId: handle.subscriptionId, created: handle.created };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/subscriptions/{subscriptionId}',
    operationId: 'getSubscription',
    summary: "A subscription's state, commands and downtime",
    role: 'read',
    params: s.subscriptionIdParams,
    success: { status: 200, description: 'its status', schema: s.subscriptionStatusSchema },
    errors: [404],
    example: `${CURL} $API/v1/subscriptions/${SUBSCRIPTION_ID}`,
    handle: ({ params, key, api }) => ownSubscription(key, api, params.subscriptionId).status(),
  }),
  route({
    method: 'POST',
    path: '/v1/subscriptions/{subscriptionId}/stop',
    operationId: 'stopSubscription',
    summary: 'Stop a subscription for good; commands already received still go to the callback',
    role: 'operate',
    params: s.subscriptionIdParams,
    body: s.reasonBody,
    success: { status: 200, description: 'its result', schema: s.subscriptionResultSchema },
    errors: [400, 404],
    example: `${CURL} -X POST -H 'Content-Type: application/json' -d '{"reason":"device retired"}' $API/v1/subscriptions/${SUBSCRIPTION_ID}/stop`,
    handle: ({ params, body, key, api }) => ownSubscription(key, api, params.subscriptionId).stop(body?.reason ?? ''),
  }),
];
