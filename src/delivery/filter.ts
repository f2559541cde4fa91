import type { ErrorClass } from '../classify/types';
import type { DeliveryStateName, MessageKind } from './types';

/** Outcomes that leave a dead letter: the message is kept and can be redriven. */
export const DEAD_LETTER_STATES = ['rejected', 'expired', 'exhausted', 'dropped'] as const;
export type DeadLetterState = (typeof DEAD_LETTER_STATES)[number];

/** Which deliveries to list, count or redrive; every field narrows the match. */
export interface DeliveryFilter {
  state?: DeliveryStateName | DeliveryStateName[];
  kind?: MessageKind;
  tenant?: string;
  device?: string;
  /** host[:port] of the target */
  endpoint?: string;
  errorClass?: ErrorClass;
  /** Started (or, for finished deliveries, ended) at or after this time. */
  since?: Date;
  until?: Date;
}

const quote = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The Temporal visibility query for a filter: the same text an operator can paste into the UI. */
export function visibilityQuery(filter: DeliveryFilter, taskQueue?: string): string {
  const clauses = [`WorkflowType = 'deliveryWorkflow'`];
  if (taskQueue) clauses.push(`TaskQueue = ${quote(taskQueue)}`);
  const states = filter.state === undefined ? [] : Array.isArray(filter.state) ? filter.state : [filter.state];
  if (states.length === 1) clauses.push(`DeliveryState = ${quote(states[0]!)}`);
  if (states.length > 1) clauses.push(`DeliveryState IN (${states.map(quote).join(', ')})`);
  if (filter.kind) clauses.push(`DeliveryKind = ${quote(filter.kind)}`);
  if (filter.tenant) clauses.push(`Tenant = ${quote(filter.tenant)}`);
  if (filter.device) clauses.push(`Device = ${quote(filter.device)}`);
  if (filter.endpoint) clauses.push(`Endpoint = ${quote(filter.endpoint)}`);
  if (filter.errorClass) clauses.push(`LastErrorClass = ${quote(filter.errorClass)}`);
  // finished deliveries are placed in time by when they ended, running ones by when they started
  const finished = states.length > 0 && states.every((s) => !['pending', 'attempting', 'waiting', 'paused'].includes(s));
  const time = finished ? 'CloseTime' : 'StartTime';
  if (filter.since) clauses.push(`${time} >= ${quote(filter.since.toISOString())}`);
  if (filter.until) clauses.push(`${time} <= ${quote(filter.until.toISOString())}`);
  return clauses.join(' AND ');
}

/** The running endpoint workflows (workflows/endpoint.ts) of a task queue. */
export function endpointsQuery(taskQueue: string): string {
  return `WorkflowType = 'endpointWorkflow' AND TaskQueue = ${quote(taskQueue)} AND ExecutionStatus = 'Running'`;
}
