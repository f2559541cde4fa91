import ms from 'ms';
import { InvalidInputError, type Problem } from '../errors';
import type { DeliveryFilter } from '../delivery/filter';

/** A filter as a person types it (the CLI's flags, the HTTP API's query): text, checked by `filterFrom`. */
export interface FilterInput {
  /** Comma-separated states; several values are joined. */
  state?: string | string[];
  kind?: string;
  tenant?: string;
  device?: string;
  endpoint?: string;
  errorClass?: string;
  since?: string;
  until?: string;
}

export const FILTER_STATES = [
  'pending',
  'queued',
  'waiting',
  'paused',
  'delivered',
  'rejected',
  'expired',
  'exhausted',
  'dropped',
  'cancelled',
];
export const FILTER_KINDS = ['telemetry', 'event', 'command-response'];
export const FILTER_CLASSES = ['client', 'well-known', 'server', 'connection'];

/**
 * Text → DeliveryFilter, refusing bad values all at once; `field` names each input as its caller shows it
 * (`--error-class` in the CLI, `errorClass` in the API).
 */
export function filterFrom(
  input: FilterInput,
  options: { states?: readonly string[]; now?: number; field?: (name: keyof FilterInput) => string; what?: string } = {},
): DeliveryFilter {
  const { states = FILTER_STATES, now = Date.now(), field = (name) => name, what = 'filter' } = options;
  const problems: Problem[] = [];
  const oneOf = (name: keyof FilterInput, value: string | undefined, allowed: readonly string[]) => {
    if (value !== undefined && !allowed.includes(value))
      problems.push({ field: field(name), message: `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}` });
    return value;
  };
  const time = (name: 'since' | 'until') => timeFrom(field(name), input[name], problems, now);
  const stateList = [input.state ?? []]
    .flat()
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of stateList) oneOf('state', s, states);
  const filter: DeliveryFilter = {
    ...(stateList.length && { state: stateList as DeliveryFilter['state'] }),
    ...(oneOf('kind', input.kind, FILTER_KINDS) && { kind: input.kind as DeliveryFilter['kind'] }),
    ...(input.tenant && { tenant: input.tenant }),
    ...(input.device && { device: input.device }),
    ...(input.endpoint && { endpoint: input.endpoint }),
    ...(oneOf('errorClass', input.errorClass, FILTER_CLASSES) && { errorClass: input.errorClass as DeliveryFilter['errorClass'] }),
  };
  const since = time('since');
  const until = time('until');
  if (since) filter.since = since;
  if (until) filter.until = until;
  if (problems.length) throw new InvalidInputError(problems, what);
  return filter;
}

/** A time: an ISO date, or a duration ago such as 2h or 7d; a problem naming the field otherwise. */
export function timeFrom(field: string, value: string | undefined, problems: Problem[], now = Date.now()): Date | undefined {
  if (value === undefined) return undefined;
  const ago = durationAgo(value);
  const at = ago !== undefined ? now - ago : Date.parse(value);
  // a Date holds ±100,000,000 days around 1970: `100000000y` ago is none (and its toISOString throws)
  if (Number.isFinite(at) && Number.isFinite(new Date(at).getTime())) return new Date(at);
  const why =
    ago !== undefined ? 'is too far back: a time is at most 270,000 years from 1970' : 'must be an ISO date or a duration ago such as 2h';
  problems.push({ field, message: `${why}, got ${JSON.stringify(value)}` });
  return undefined;
}

/** `2h`, `7d`: a duration in ms; undefined for anything else (`ms` throws on an empty or a long string). */
function durationAgo(value: string): number | undefined {
  try {
    const ago = ms(value as Parameters<typeof ms>[0]);
    return typeof ago === 'number' && Number.isFinite(ago) && ago >= 0 ? ago : undefined;
  } catch {
    return undefined;
  }
}
