import type { Command } from 'commander';
import ms from 'ms';
import { InvalidInputError, type Problem } from '../errors';
import type { DeliveryFilter } from '../delivery/filter';

export interface FilterFlags {
  state?: string;
  kind?: string;
  tenant?: string;
  device?: string;
  endpoint?: string;
  errorClass?: string;
  since?: string;
  until?: string;
}

const STATES = ['pending', 'waiting', 'paused', 'delivered', 'rejected', 'expired', 'exhausted', 'dropped', 'cancelled'];
const KINDS = ['telemetry', 'event', 'command-response'];
const CLASSES = ['client', 'well-known', 'server', 'connection'];

/** --state, --kind, --tenant, --device, --endpoint, --error-class, --since, --until. */
export function withFilterFlags(command: Command, states = STATES): Command {
  return command
    .option('--state <states>', `comma-separated: ${states.join(', ')}`)
    .option('--kind <kind>', KINDS.join(' | '))
    .option('--tenant <tenant>', 'tenant id')
    .option('--device <device>', 'device id')
    .option('--endpoint <host>', 'target host[:port]')
    .option('--error-class <class>', `last error class: ${CLASSES.join(' | ')}`)
    .option('--since <time>', 'from this time: ISO date, or a duration ago such as 2h, 7d')
    .option('--until <time>', 'up to this time: ISO date, or a duration ago');
}

/** Flags → DeliveryFilter, refusing bad values with the flag's name. */
export function filterFromFlags(flags: FilterFlags, states = STATES, now = Date.now()): DeliveryFilter {
  const problems: Problem[] = [];
  const oneOf = (flag: string, value: string | undefined, allowed: string[]) => {
    if (value !== undefined && !allowed.includes(value))
      problems.push({ field: flag, message: `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}` });
    return value;
  };
  const time = (flag: string, value: string | undefined) => timeFlag(flag, value, problems, now);
  const stateList = flags.state
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of stateList ?? []) oneOf('--state', s, states);
  const filter: DeliveryFilter = {
    ...(stateList?.length && { state: stateList as DeliveryFilter['state'] }),
    ...(oneOf('--kind', flags.kind, KINDS) && { kind: flags.kind as DeliveryFilter['kind'] }),
    ...(flags.tenant && { tenant: flags.tenant }),
    ...(flags.device && { device: flags.device }),
    ...(flags.endpoint && { endpoint: flags.endpoint }),
    ...(oneOf('--error-class', flags.errorClass, CLASSES) && { errorClass: flags.errorClass as DeliveryFilter['errorClass'] }),
  };
  const since = time('--since', flags.since);
  const until = time('--until', flags.until);
  if (since) filter.since = since;
  if (until) filter.until = until;
  if (problems.length) throw new InvalidInputError(problems, 'flags');
  return filter;
}

/** A time flag: an ISO date, or a duration ago such as 2h or 7d; a problem naming the flag otherwise. */
export function timeFlag(flag: string, value: string | undefined, problems: Problem[], now = Date.now()): Date | undefined {
  if (value === undefined) return undefined;
  const ago = ms(value as Parameters<typeof ms>[0]);
  if (typeof ago === 'number' && Number.isFinite(ago) && ago >= 0) return new Date(now - ago);
  const at = Date.parse(value);
  if (Number.isFinite(at)) return new Date(at);
  problems.push({ field: flag, message: `must be an ISO date or a duration ago such as 2h, got ${JSON.stringify(value)}` });
  return undefined;
}
