import type { ErrorClass } from '../classify/types';
import type { DeliveryStateName, MessageKind } from './types';

/** Outcomes that leave a dead letter: the message is kept and can be redriven. */
export const DEAD_LETTER_STATES = ['rejected', 'expired', 'exhausted', 'dropped'] as const;
export type DeadLetterState = (typeof DEAD_LETTER_STATES)[number];

/** States of a delivery that has not ended. */
export const OPEN_STATES = ['pending', 'queued', 'attempting', 'waiting', 'paused'] as const;

/** Which deliveries to list, count or redrive; every field narrows the match. */
export interface DeliveryFilter {
  state?: DeliveryStateName | DeliveryStateName[];
  kind?: MessageKind;
  /** One tenant, or any of several (an API key's tenants). */
  tenant?: string | string[];
  device?: string;
  /** host[:port] of the target */
  endpoint?: string;
  errorClass?: ErrorClass;
  /** Started (or, for finished deliveries, ended) at or after this time. */
  since?: Date;
  until?: Date;
}

/** A string as a visibility query takes it: quoted, its quotes and backslashes escaped. */
export const visibilityString = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const listOf = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** The clause that matches any of the values (none when there are none). */
function anyOf(attribute: string, values: readonly string[]): string[] {
  if (values.length === 0) return [];
  return [
    values.length === 1 ? `${attribute} = ${visibilityString(values[0]!)}` : `${attribute} IN (${values.map(visibilityString).join(', ')})`,
  ];
}

/** The Temporal visibility query for a filter: the same text an operator can paste into the UI. */
export function visibilityQuery(filter: DeliveryFilter, taskQueue?: string): string {
  const clauses = [`WorkflowType = 'deliveryWorkflow'`];
  if (taskQueue) clauses.push(`TaskQueue = ${visibilityString(taskQueue)}`);
  const states = listOf(filter.state);
  clauses.push(...anyOf('DeliveryState', states));
  if (filter.kind) clauses.push(`DeliveryKind = ${visibilityString(filter.kind)}`);
  clauses.push(...anyOf('Tenant', listOf(filter.tenant)));
  if (filter.device) clauses.push(`Device = ${visibilityString(filter.device)}`);
  if (filter.endpoint) clauses.push(`Endpoint = ${visibilityString(filter.endpoint)}`);
  if (filter.errorClass) clauses.push(`LastErrorClass = ${visibilityString(filter.errorClass)}`);
  // finished deliveries are placed in time by when they ended, running ones by when they started
  const finished = states.length > 0 && states.every((s) => !(OPEN_STATES as readonly string[]).includes(s));
  const time = finished ? 'CloseTime' : 'StartTime';
  if (filter.since) clauses.push(`${time} >= ${visibilityString(filter.since.toISOString())}`);
  if (filter.until) clauses.push(`${time} <= ${visibilityString(filter.until.toISOString())}`);
  return clauses.join(' AND ');
}

/** The running endpoint workflows (endpointWorkflow) of a task queue. */
export function endpointsQuery(taskQueue: string): string {
  return `WorkflowType = 'endpointWorkflow' AND TaskQueue = ${visibilityString(taskQueue)} AND ExecutionStatus = 'Running'`;
}

/** The running outage holds of a tenant (holdWorkflow, docs/endpoint-health.md "Outages"): where a message without a delivery of its own may wait. */
export function runningHoldsQuery(tenant: string): string {
  return `WorkflowType = 'holdWorkflow' AND ExecutionStatus = 'Running' AND Tenant = ${visibilityString(tenant)}`;
}
