import type { Command } from 'commander';
import type { DeliveryFilter } from '../delivery/filter';
import { FILTER_CLASSES, FILTER_KINDS, FILTER_STATES, filterFrom, timeFrom, type FilterInput } from '../validation/filter';

/** The filter flags, as commander hands them over: the same fields as an API query. */
export type FilterFlags = FilterInput;

const STATES = FILTER_STATES;
const KINDS = FILTER_KINDS;
const CLASSES = FILTER_CLASSES;

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
  const field = (name: string) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  return filterFrom(flags, { states, now, field, what: 'flags' });
}

/** A time flag: an ISO date, or a duration ago such as 2h or 7d; a problem naming the flag otherwise. */
export const timeFlag = timeFrom;
