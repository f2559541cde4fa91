import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Search attributes every delivery keeps current, so operators can filter the UI's workflow list. */
export const DeliveryKind = defineSearchAttributeKey('DeliveryKind', SearchAttributeType.KEYWORD);
export const DeliveryState = defineSearchAttributeKey('DeliveryState', SearchAttributeType.KEYWORD);
export const Endpoint = defineSearchAttributeKey('Endpoint', SearchAttributeType.KEYWORD);
export const Tenant = defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD);
export const Device = defineSearchAttributeKey('Device', SearchAttributeType.KEYWORD);
export const Attempts = defineSearchAttributeKey('Attempts', SearchAttributeType.INT);
export const LastErrorClass = defineSearchAttributeKey('LastErrorClass', SearchAttributeType.KEYWORD);
/** An ordered delivery's key (docs/ordering.md): set at its start, on ordered deliveries only. */
export const OrderingKey = defineSearchAttributeKey('OrderingKey', SearchAttributeType.KEYWORD);
/** An endpoint's health (healthy, failing, recovering), on its endpoint's workflow. */
export const EndpointHealth = defineSearchAttributeKey('EndpointHealth', SearchAttributeType.KEYWORD);
/**
 * A batch's message index (docs/batches.md, "Finding a message by its id"): a short hash of each of its messages'
 * delivery ids, spread over three lists because one search attribute value may take 2 KiB. SQL visibility allows
 * three KeywordList attributes: these are all of them.
 */
export const BatchMessages1 = defineSearchAttributeKey('BatchMessages1', SearchAttributeType.KEYWORD_LIST);
export const BatchMessages2 = defineSearchAttributeKey('BatchMessages2', SearchAttributeType.KEYWORD_LIST);
export const BatchMessages3 = defineSearchAttributeKey('BatchMessages3', SearchAttributeType.KEYWORD_LIST);

export const SEARCH_ATTRIBUTES = [
  DeliveryKind,
  DeliveryState,
  Endpoint,
  Tenant,
  Device,
  Attempts,
  LastErrorClass,
  EndpointHealth,
  OrderingKey,
  BatchMessages1,
  BatchMessages2,
  BatchMessages3,
];
