import { createHash } from 'node:crypto';
import { isMqttTarget, type Delivery, type HttpBatching, type HttpTarget } from '../delivery/types';
import type { HttpRequest } from '../transports/http';
import type { Signing } from '../transports/signing';
import type { AttemptResult, RequestAttempt } from './deliver';

/*
 * The first attempts of a batch to an endpoint that takes many messages in one request (target.batch,
 * docs/batches.md): which messages go together, and the request that carries them.
 */

/**
 * The `message-ids` header at most: servers take 8–16 KiB of headers in all, and the target's own may use
 * 8 KiB. Past it (or when an id holds a comma, which would split it) the header is left out: the body
 * always carries every id.
 */
export const MAX_MESSAGE_IDS_HEADER_BYTES = 4 * 1024;

const CONTENT_TYPES = { json: 'application/json', ndjson: 'application/x-ndjson' } as const;

/** `application/json`, `application/<anything>+json`, with or without parameters. */
const JSON_MEDIA_TYPE = /^application\/(?:[^\s;]*\+)?json\s*(?:;|$)/i;

/** One request of a batch's first attempts: a message on its own (no `request`), or several in one batched request. */
export interface PlannedSend {
  /** Indexes into the batch's deliveries. */
  indexes: number[];
  request?: HttpRequest;
  /** A batched request to a target with a signing secret: its name, and the request's `webhook-id`. */
  signing?: Signing;
}

interface OpenGroup {
  target: HttpTarget & { batch: HttpBatching };
  indexes: number[];
  elements: string[];
  bytes: number;
}

/**
 * The sends of a batch's messages still pending: each opted-in target's messages (same URL, method,
 * headers, timeout and batching) packed in order into requests of at most maxMessages and maxBytes; every
 * other message, and one left alone in its group or bigger than maxBytes by itself, on its own.
 */
export function planSends(deliveries: readonly Delivery[], pending: (index: number) => boolean): PlannedSend[] {
  const sends: PlannedSend[] = [];
  const open = new Map<string, OpenGroup>();
  const close = (group: OpenGroup) => sends.push(group.indexes.length === 1 ? { indexes: group.indexes } : sendOf(group, deliveries));
  deliveries.forEach((delivery, i) => {
    if (!pending(i)) return;
    const target = delivery.target;
    if (isMqttTarget(target) || !target.batch) return void sends.push({ indexes: [i] });
    const key = groupKey(target);
    const element = elementOf(delivery);
    const bytes = Buffer.byteLength(element, 'utf8') + 1; // its separator: a comma, or a line's end
    const group = open.get(key);
    if (group && group.indexes.length < target.batch.maxMessages && group.bytes + bytes <= target.batch.maxBytes) {
      group.indexes.push(i);
      group.elements.push(element);
      group.bytes += bytes;
      return;
    }
    if (group) close(group);
    // a JSON array's brackets take one byte more than its commas
    const brackets = target.batch.format === 'json' ? 1 : 0;
    open.set(key, { target: { ...target, batch: target.batch }, indexes: [i], elements: [element], bytes: bytes + brackets });
  });
  for (const group of open.values()) close(group);
  return sends;
}

/** Sends one planned send: a batched request through `attemptRequest`, a message on its own as any first attempt. */
export function sendPlanned(
  deps: { attempt: (delivery: Delivery, attempt: number, clock?: () => number) => Promise<AttemptResult>; attemptRequest: RequestAttempt },
  deliveries: readonly Delivery[],
  send: PlannedSend,
  clock: () => number,
): Promise<AttemptResult[]> {
  const messages = send.indexes.map((i) => deliveries[i]!);
  if (send.request) return deps.attemptRequest(messages, send.request, clock, send.signing);
  return deps.attempt(messages[0]!, 1, clock).then((result) => [result]);
}

/** Messages may share a request only if everything about the request but its body is the same. */
function groupKey(target: HttpTarget): string {
  const headers = Object.entries(target.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([target.url, target.method, headers, target.timeout, target.batch, target.signing]);
}

function sendOf(group: OpenGroup, deliveries: readonly Delivery[]): PlannedSend {
  const { target, indexes, elements } = group;
  const format = target.batch.format;
  const ids = indexes.map((i) => deliveries[i]!.messageId);
  const idList = ids.join(',');
  const listed = Buffer.byteLength(idList) <= MAX_MESSAGE_IDS_HEADER_BYTES && !ids.some((id) => id.includes(','));
  const headers: Record<string, string> = {
    ...target.headers,
    'content-type': CONTENT_TYPES[format],
    'delivery-attempt': '1',
    ...(listed && { 'message-ids': idList }),
  };
  const body = format === 'json' ? `[${elements.join(',')}]` : `${elements.join('\n')}\n`;
  const request = { url: target.url, method: target.method, headers, body, timeoutMs: target.timeout };
  // a batch is one tenant's (planBatches), and so is each of its requests
  const tenant = deliveries[indexes[0]!]!.tenant;
  const signing = target.signing && { secret: target.signing, id: batchRequestId(indexes.map((i) => deliveries[i]!.deliveryId)), tenant };
  return { indexes, request, ...(signing && { signing }) };
}

/**
 * A batched request's `webhook-id`: the same for the same deliveries, so a request sent again after its
 * worker was lost carries the id a receiver already saw. Made of delivery ids, not message ids: two
 * tenants' batches of the same message ids are two messages.
 */
export function batchRequestId(deliveryIds: readonly string[]): string {
  return `batch_${createHash('sha256').update(deliveryIds.join('\n')).digest('base64url')}`;
}

/**
 * One message in a batched request, on one line: what its own request's headers would say, and its payload —
 * a JSON body as the JSON value itself (its bytes as they are, so large numbers keep their digits), any
 * other body (or a body typed JSON that does not parse) as a string.
 */
export function elementOf(delivery: Delivery): string {
  const { messageId, kind, tenant, device, qos, command, contentType, body } = delivery;
  const meta = JSON.stringify({
    messageId,
    kind,
    tenant,
    device,
    ...(kind === 'telemetry' && { qos }),
    ...(command && { command }),
    contentType,
  });
  return `${meta.slice(0, -1)},"payload":${payloadOf(contentType, body)}}`;
}

function payloadOf(contentType: string, body: string): string {
  if (!JSON_MEDIA_TYPE.test(contentType)) return JSON.stringify(body);
  try {
    JSON.parse(body);
  } catch {
    return JSON.stringify(body);
  }
  // in valid JSON a line break can only be whitespace between tokens: a space keeps the value and the line whole
  return body.replace(/[\r\n]/g, ' ');
}
