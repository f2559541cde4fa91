import { isUtf8 } from 'node:buffer';
import { createHash, randomUUID } from 'node:crypto';
import type { DeliveryInput, MessageKind } from '../delivery/types';
import type { BackoffPolicyInput } from '../policy/types';
import { mapTopic } from './topics';

/** What the bridge makes of a message, besides what the message itself says. */
export interface MessageMapping {
  /** Where each kind's deliveries go. */
  targets: Record<MessageKind, DeliveryInput['target']>;
  /** The deliveries' backoff policy; null: each kind's default. */
  policy: BackoffPolicyInput | null;
  /** The MQTT 5 user property that carries a message's id. */
  messageIdProperty: string;
  /** The bridge's MQTT client id: a packet id means something within its session only. */
  clientId: string;
}

/** The part of an MQTT PUBLISH the bridge reads (mqtt.js's IPublishPacket has it). */
export interface ReceivedPublish {
  topic: string;
  payload: Buffer | string;
  qos: number;
  messageId?: number | undefined;
  properties?: { userProperties?: Record<string, string | string[]>; contentType?: string } | undefined;
}

/** MQTT 5 reason codes a subscriber's PUBACK may carry (MQTT 5.0 §3.4.2.1). */
export const PUBACK = { success: 0x00, implementationSpecificError: 0x83, topicNameInvalid: 0x90, payloadFormatInvalid: 0x99 } as const;

export type Converted = { ok: true; input: DeliveryInput } | { ok: false; reasonCode: number; reason: string };

/**
 * A received message as a delivery: kind, tenant and device from the topic (Hono's layout), the message id
 * from the user property (else derived: derivedMessageId), telemetry's QoS from the packet's, the payload as
 * text. What can never become a delivery is refused here, with the PUBACK reason code that says why.
 */
export function deliveryOf(packet: ReceivedPublish, mapping: MessageMapping): Converted {
  const topic = mapTopic(packet.topic);
  if (!topic.ok) return { ok: false, reasonCode: PUBACK.topicNameInvalid, reason: topic.reason };
  const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
  // a delivery's payload is text, sent as it is: bytes that are not UTF-8 would not survive the trip
  if (!isUtf8(payload))
    return { ok: false, reasonCode: PUBACK.payloadFormatInvalid, reason: 'its payload is not UTF-8 text, and a delivery carries text' };
  const given = packet.properties?.userProperties?.[mapping.messageIdProperty];
  const contentType = packet.properties?.contentType;
  const input: DeliveryInput = {
    kind: topic.kind,
    tenant: topic.tenant,
    device: topic.device,
    messageId: (Array.isArray(given) ? given[0] : given) ?? derivedMessageId(packet, payload, mapping.clientId),
    target: mapping.targets[topic.kind],
    payload: payload.toString('utf8'),
    ...(topic.kind === 'telemetry' && { qos: packet.qos === 0 ? 0 : 1 }),
    ...(contentType !== undefined && { contentType }),
    ...(topic.kind === 'command-response' && { command: { requestId: topic.requestId, status: topic.status } }),
    ...(mapping.policy && { policy: mapping.policy }),
  };
  return { ok: true, input };
}

/**
 * The id of a message that carries none. QoS 1: a hash of the bridge's client id, the packet id, the topic and
 * the payload. A broker resends an unacknowledged message to the same session with its packet id (MQTT 5.0
 * §4.4), so a bridge that comes back after a crash gives it the same id and its delivery dedupes; two messages
 * in flight at once never share a packet id, so they never share an id. Only the same topic and payload
 * coming again under the same packet id, 65,535 packets later, would. A broker that sends it to another
 * session instead gives it another id: the receiver gets it twice, under two ids (never lost). QoS 0: a fresh
 * UUID (a QoS 0 message is never resent, and two alike are two messages).
 */
export function derivedMessageId(packet: Pick<ReceivedPublish, 'topic' | 'qos' | 'messageId'>, payload: Buffer, clientId: string): string {
  if (packet.qos === 0 || packet.messageId === undefined) return `mqtt-${randomUUID()}`;
  const hash = createHash('sha256').update(`${clientId}\n${packet.messageId}\n${packet.topic}\n`).update(payload);
  return `mqtt-${hash.digest('base64url').slice(0, 32)}`;
}
