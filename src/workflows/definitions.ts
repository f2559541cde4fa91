import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery } from '@temporalio/workflow';
import type { DeliveryStatus } from '../delivery/types';

/** Search attributes every delivery keeps current, so operators can filter the UI's workflow list. */
export const DeliveryKind = defineSearchAttributeKey('DeliveryKind', SearchAttributeType.KEYWORD);
export const DeliveryState = defineSearchAttributeKey('DeliveryState', SearchAttributeType.KEYWORD);
export const Endpoint = defineSearchAttributeKey('Endpoint', SearchAttributeType.KEYWORD);
export const Tenant = defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD);
export const Device = defineSearchAttributeKey('Device', SearchAttributeType.KEYWORD);
export const Attempts = defineSearchAttributeKey('Attempts', SearchAttributeType.INT);
export const LastErrorClass = defineSearchAttributeKey('LastErrorClass', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [DeliveryKind, DeliveryState, Endpoint, Tenant, Device, Attempts, LastErrorClass];

/** The delivery's current state, attempts, next attempt time and last error. */
export const statusQuery = defineQuery<DeliveryStatus>('status');
