import type { FastifyRequest } from 'fastify';
import { DEAD_LETTER_STATES } from '../delivery/filter';
import type { DeliveryResult, DeliveryStatus } from '../delivery/types';
import type { ConsolePage, ConsoleScope } from './types';

/** A delivery's page in the console: `/console/deliveries/<id, URL-encoded>`. */
export const deliveryPage = (deliveryId: string) => `/console/deliveries/${encodeURIComponent(deliveryId)}`;

const CONTROLS = [
  { name: 'retry-now', label: 'Retry now' },
  { name: 'pause', label: 'Pause' },
  { name: 'resume', label: 'Resume' },
  { name: 'cancel', label: 'Cancel' },
] as const;
const CONTROL_OPERATION: Record<string, string> = {
  'retry-now': 'retryNowDelivery',
  pause: 'pauseDelivery',
  resume: 'resumeDelivery',
  cancel: 'cancelDelivery',
};
const DONE: Record<string, string> = {
  'retry-now': 'Its next attempt starts now.',
  pause: 'Paused.',
  resume: 'Resumed.',
  cancel: 'Cancelled.',
  redrive: 'Redriven: a new run of the same delivery.',
};

/** The filter fields of the search forms, as the API's query takes them (empty ones left out). */
const FILTER_FIELDS = ['tenant', 'device', 'endpoint', 'state', 'errorClass', 'since', 'until', 'kind', 'cursor'] as const;

function filterOf(query: unknown): Record<string, string> {
  const given = (query ?? {}) as Record<string, unknown>;
  const filter: Record<string, string> = {};
  for (const field of FILTER_FIELDS) {
    const value = given[field];
    if (typeof value === 'string' && value.trim() !== '') filter[field] = value.trim();
  }
  return filter;
}

/** The same listing with the page cursor of the next page. */
function nextLink(action: string, filter: Record<string, string>, cursor: string | null): string | null {
  if (!cursor) return null;
  return `${action}?${new URLSearchParams({ ...filter, cursor }).toString()}`;
}

export function registerDeliveryPages(scope: ConsoleScope): void {
  scope.get('/deliveries', async (page, req, reply) => {
    const id = (req.query as { id?: unknown }).id;
    if (typeof id === 'string' && id.trim() !== '') return reply.redirect(deliveryPage(id.trim()), 303);
    return listing(page, req, false);
  });
  scope.get('/dead-letters', async (page, req) => listing(page, req, true));
  scope.get('/deliveries/:deliveryId', async (page, req) => deliveryView(page, scope, req));
  scope.get('/dead-letters/:deliveryId', async (page, req, reply) =>
    reply.redirect(deliveryPage((req.params as { deliveryId: string }).deliveryId), 303),
  );
  scope.post('/deliveries/:deliveryId/:control', async (page, req, reply) => {
    const { deliveryId, control } = req.params as { deliveryId: string; control: string };
    const operationId = CONTROL_OPERATION[control];
    if (!operationId) return page.render('problem', { title: 'Not found', heading: 'Not found', detail: `no control ${control}` }, 404);
    const reason = (req.body as { reason?: unknown }).reason;
    const body = control === 'pause' && typeof reason === 'string' && reason !== '' ? { reason } : undefined;
    await page.call(operationId, { params: { deliveryId }, body });
    return reply.redirect(`${deliveryPage(deliveryId)}?done=${control}`, 303);
  });
  scope.post('/dead-letters/:deliveryId/redrive', async (page, req, reply) => {
    const { deliveryId } = req.params as { deliveryId: string };
    await page.call('redrive', { params: { deliveryId } });
    return reply.redirect(`${deliveryPage(deliveryId)}?done=redrive`, 303);
  });
  scope.post('/redrives', async (page, req, reply) => {
    const { cursor: _cursor, ...filter } = filterOf(req.body);
    const job = (await page.call('redriveAll', { body: filter })) as { jobId: string };
    return reply.redirect(`/console/redrives/${encodeURIComponent(job.jobId)}`, 303);
  });
  scope.get('/redrives/:jobId', async (page, req) => {
    const job = (await page.call('getRedrive', { params: req.params })) as { state: string };
    return page.render('job', { title: 'Redrive', job, refreshSeconds: job.state === 'running' ? 1 : 0 });
  });
}

/** A page of deliveries (or of dead letters), filtered as the form says. */
async function listing(page: ConsolePage, req: FastifyRequest, deadLetters: boolean) {
  const filter = filterOf(req.query);
  const action = deadLetters ? '/console/dead-letters' : '/console/deliveries';
  const found = (await page.call(deadLetters ? 'listDeadLetters' : 'listDeliveries', { query: filter })) as {
    deliveries: { deliveryId: string }[];
    nextCursor: string | null;
  };
  const { cursor: _cursor, ...redrive } = filter;
  return page.render('deliveries', {
    title: deadLetters ? 'Dead letters' : 'Deliveries',
    heading: deadLetters ? 'Dead letters' : 'Deliveries',
    action,
    byId: !deadLetters,
    statesHint: deadLetters ? DEAD_LETTER_STATES.join(',') : 'waiting,paused,delivered,…',
    rows: found.deliveries,
    linkOf: deliveryPage,
    next: nextLink(action, filter, found.nextCursor),
    redrive: deadLetters && page.key.roles.has('operate') ? Object.entries(redrive) : null,
  });
}

/** One delivery: its facts, policy, next attempt, every attempt with the endpoint's answer; its controls for an operate key. */
async function deliveryView(page: ConsolePage, scope: ConsoleScope, req: FastifyRequest) {
  const { deliveryId } = req.params as { deliveryId: string };
  const status = (await page.call('getDelivery', { params: { deliveryId } })) as DeliveryStatus;
  const deadLetter = (DEAD_LETTER_STATES as readonly string[]).includes(status.state)
    ? ((await page.call('getDeadLetter', { params: { deliveryId } }).catch(() => null)) as DeliveryResult | null)
    : null;
  const { temporalUi, namespace } = scope.options;
  const workflowId = status.batch?.workflowId ?? status.hold?.holdId ?? deliveryId;
  const done = (req.query as { done?: unknown }).done;
  return page.render('delivery', {
    title: deliveryId,
    status,
    deadLetter,
    notice: typeof done === 'string' ? DONE[done] : undefined,
    selfLink: deliveryPage(deliveryId),
    endpointLink: `/console/endpoints/${encodeURIComponent(status.endpoint)}`,
    canOperate: page.key.roles.has('operate'),
    controls: CONTROLS,
    temporalLink: temporalUi && `${temporalUi}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`,
    temporalWhat: status.batch ? 'the batch it came in' : status.hold ? 'the outage hold it waits in' : 'its workflow',
  });
}
