import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EndpointView } from '../client/index';
import { humanDuration } from '../delivery/summary';
import type { EndpointDowntimeReport } from '../endpoints/types';
import { InvalidInputError, type Problem } from '../errors';
import { renderFigure } from '../plot';
import { endpointTimelineFigure } from '../plot/endpoints';
import { formatDuration, policyProblems, type BackoffPolicyInput } from '../policy';
import { budgetOf, figureRows, whatIf, type WhatIf } from '../simulate/what-if';
import { timeFrom } from '../validation/filter';
import { wholeNumber } from '../validation/whole-number';
import type { ConsolePage, ConsoleScope } from './types';

const endpointPage = (endpoint: string) => `/console/endpoints/${encodeURIComponent(endpoint)}`;

/** The settings form's fields: the names of `PATCH /v1/endpoints/{endpoint}/settings`. */
const SETTINGS = [
  { name: 'maxInFlight', label: 'Max in flight', hint: '50, off' },
  { name: 'rate', label: 'Rate', hint: '200/s, 12000/min, off' },
  { name: 'breaker', label: 'Breaker', hint: 'on, off' },
  { name: 'probeEvery', label: 'Probe every', hint: '1s' },
  { name: 'autoDisableAfter', label: 'Auto-disable after', hint: '1h, off' },
  { name: 'priority', label: 'Priority', hint: 'deadline-first, fifo' },
  { name: 'outage', label: 'Outage', hint: 'hold, off' },
] as const;

/** The what-if form's fields: a candidate policy's fields, the budget, the seed and the window, as `redeliver simulate` takes them. */
const WHAT_IF = [
  { name: 'initial', label: 'Initial', hint: '1s' },
  { name: 'multiplier', label: 'Multiplier', hint: '2' },
  { name: 'max', label: 'Max wait', hint: '5m' },
  { name: 'maxAttempts', label: 'Max attempts', hint: '20' },
  { name: 'maxAge', label: 'Max age', hint: '24h, none' },
  { name: 'jitter', label: 'Jitter', hint: 'full, equal, none' },
  { name: 'budget', label: 'Retry budget', hint: 'off, 10/s' },
  { name: 'since', label: 'Since', hint: '1h' },
  { name: 'seed', label: 'Seed', hint: '1' },
] as const;

const typed = (input: unknown, name: string): string | undefined => {
  const value = (input as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
};

export function registerEndpointPages(scope: ConsoleScope): void {
  scope.get('/endpoints', async (page, req) => {
    const cursor = typed(req.query, 'cursor');
    const found = (await page.call('listEndpoints', { query: cursor ? { cursor } : {} })) as {
      endpoints: EndpointView[];
      nextCursor: string | null;
    };
    const next = found.nextCursor && `/console/endpoints?${new URLSearchParams({ cursor: found.nextCursor }).toString()}`;
    return page.render('endpoints', { title: 'Endpoints', rows: found.endpoints, next, duration: humanDuration });
  });
  scope.get('/endpoints/:endpoint', async (page, req) => endpointView(page, (req.params as { endpoint: string }).endpoint, req));
  scope.get('/endpoints/:endpoint/timeline.svg', async (page, req, reply) => {
    const { endpoint } = req.params as { endpoint: string };
    const { report } = await readable(page, endpoint);
    const timeline = await scope.options.api.redeliver.endpointTimeline(endpoint);
    return svg(reply, renderFigure(endpointTimelineFigure({ endpoint, timeline, report })));
  });
  scope.get('/endpoints/:endpoint/what-if', async (page, req) => {
    const { endpoint } = req.params as { endpoint: string };
    const replay = await replayed(page, scope, endpoint, req.query);
    return page.render('what-if', {
      title: `What if: ${endpoint}`,
      endpoint,
      deliveries: replay.deliveries,
      words: replay.words,
      rows: figureRows(replay.figures),
      plotLink: `${endpointPage(endpoint)}/what-if.svg?${new URLSearchParams(req.query as Record<string, string>).toString()}`,
    });
  });
  scope.get('/endpoints/:endpoint/what-if.svg', async (page, req, reply) => {
    const { endpoint } = req.params as { endpoint: string };
    return svg(reply, renderFigure((await replayed(page, scope, endpoint, req.query)).figure));
  });
  scope.post('/endpoints/:endpoint/settings', async (page, req, reply) => {
    const { endpoint } = req.params as { endpoint: string };
    const body: Record<string, unknown> = {};
    for (const { name } of SETTINGS) {
      const value = typed(req.body, name);
      if (value === undefined) continue;
      body[name] = value === 'default' ? null : name === 'maxInFlight' && /^\d+$/.test(value) ? Number(value) : value;
    }
    await page.call('setEndpoint', { params: { endpoint }, body });
    return reply.redirect(`${endpointPage(endpoint)}?done=settings`, 303);
  });
  for (const mode of ['pause', 'resume', 'disable', 'enable'] as const) {
    scope.post(`/endpoints/:endpoint/${mode}`, async (page, req, reply) => {
      const { endpoint } = req.params as { endpoint: string };
      const reason = typed(req.body, 'reason');
      const body = (mode === 'pause' || mode === 'disable') && reason ? { reason } : undefined;
      await page.call(`${mode}Endpoint`, { params: { endpoint }, body });
      return reply.redirect(`${endpointPage(endpoint)}?done=${mode}`, 303);
    });
  }
}

const svg = (reply: FastifyReply, text: string) => reply.type('image/svg+xml; charset=utf-8').send(text);

/** The endpoint's control and downtime, through the API's routes: a key that may not read the endpoint gets their 404. */
async function readable(page: ConsolePage, endpoint: string) {
  const control = (await page.call('getEndpoint', { params: { endpoint } })) as Record<string, unknown> & { endpoint: string };
  const downtime = (await page.call('getDowntime', { query: { endpoint } })) as {
    downtime: { endpoint: string; report: EndpointDowntimeReport }[];
  };
  const report = downtime.downtime[0]?.report;
  if (!report)
    throw new InvalidInputError([{ field: 'endpoint', message: `no worker has reported attempts to ${endpoint} yet` }], 'endpoint');
  return { control, report };
}

async function endpointView(page: ConsolePage, endpoint: string, req: FastifyRequest) {
  const { control, report } = await readable(page, endpoint);
  const rows = (await page.call('listEndpoints', { query: { endpoint } })) as { endpoints: EndpointView[] };
  const settings = (control.settings ?? {}) as Record<string, unknown>;
  const shown = (name: string, value: unknown) =>
    value === undefined
      ? "the workers' default"
      : name === 'probeEvery' || (name === 'autoDisableAfter' && value !== 'off')
        ? formatDuration(Number(value))
        : String(value);
  const done = typed(req.query, 'done');
  return page.render('endpoint', {
    title: endpoint,
    control,
    row: rows.endpoints[0] ?? null,
    downtime: report,
    duration: humanDuration,
    selfLink: endpointPage(control.endpoint),
    limits: SETTINGS.map(({ name, label }) => [label, shown(name, settings[name])]),
    canChange: page.key.roles.has('operate') && page.key.tenants === '*',
    settingFields: SETTINGS.map((f) => ({ ...f, value: '' })),
    whatIfFields: WHAT_IF.map((f) => ({ ...f, value: typed(req.query, f.name) ?? '' })),
    notice: done && `Done: ${done}.`,
  });
}

/** The endpoint's recorded outage replayed under the candidate the form gives. */
async function replayed(page: ConsolePage, scope: ConsoleScope, endpoint: string, query: unknown): Promise<WhatIf> {
  await readable(page, endpoint);
  const problems: Problem[] = [];
  const overrides: Record<string, unknown> = {};
  for (const field of ['initial', 'multiplier', 'max', 'maxAttempts', 'maxAge', 'jitter'] as const) {
    const value = typed(query, field);
    if (value === undefined) continue;
    const numeric = field === 'multiplier' || field === 'maxAttempts';
    if (numeric && !Number.isFinite(Number(value))) problems.push({ field, message: `must be a number, got ${JSON.stringify(value)}` });
    overrides[field] = numeric ? Number(value) : field === 'maxAge' && value === 'none' ? null : value;
  }
  problems.push(...policyProblems(overrides as BackoffPolicyInput, {}));
  const budget = budgetOf({ budget: typed(query, 'budget') }, problems, { budget: 'budget', burst: 'burst' });
  const seed = wholeNumber(problems, 'seed', typed(query, 'seed') ?? '1', 0, 2 ** 32 - 1);
  const since = timeFrom('since', typed(query, 'since'), problems);
  if (problems.length) throw new InvalidInputError(problems, 'what-if');
  const recording = await scope.options.api.redeliver.endpointRecording(endpoint, since);
  return whatIf(recording, { overrides: overrides as BackoffPolicyInput, budget, seed });
}
