import { describePolicy } from '../policy/describe';
import { isMqttTarget, type Delivery, type Target } from './types';

/** A duration in words an operator reads at a glance: 0.2 s, 37 s, 4 min 10 s, 5 h 3 min, 6 d 23 h. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${Number(s.toFixed(1))} s`;
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 >= 1 && m < 10 ? `${m} min ${Math.floor(s % 60)} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** A stable code in words: http-503 → HTTP 503, net-ECONNRESET → ECONNRESET, timeout → a timeout. */
export function codeInWords(code: string): string {
  if (code.startsWith('http-')) return `HTTP ${code.slice(5)}`;
  if (code === 'mqtt-no-puback') return 'no MQTT PUBACK in time';
  if (code === 'mqtt-closed') return 'the MQTT connection closing';
  if (code.startsWith('mqtt3-connack-')) return `MQTT CONNACK ${code.slice(14)}`;
  if (code.startsWith('mqtt-')) return `MQTT ${code.slice(5)}`;
  if (code.startsWith('net-')) return code.slice(4);
  if (code.startsWith('tls-')) return `TLS ${code.slice(4)}`;
  if (code === 'timeout') return 'a timeout';
  if (code === 'worker-shutdown') return 'a worker shutting down';
  return code;
}

/** When the delivery expires (epoch ms), from its max age and deadline; null when unbounded. */
export function expiresAt(delivery: Pick<Delivery, 'policy'>, firstAttemptAt: number): number | null {
  const bounds = [delivery.policy.maxAge === null ? null : firstAttemptAt + delivery.policy.maxAge, delivery.policy.deadline].filter(
    (b): b is number => b !== null,
  );
  return bounds.length ? Math.min(...bounds) : null;
}

/** Which of its bounds a delivery's expiry is: its `deadline`, or its `max age`. */
export function expiryName(delivery: Pick<Delivery, 'policy'>, expiry: number): string {
  return delivery.policy.deadline !== null && expiry === delivery.policy.deadline ? 'deadline' : 'max age';
}

/** "waiting 37 s after HTTP 503 — attempt 4, expires in 6 d 23 h" */
export function waitingSummary(args: {
  delayMs: number;
  code: string;
  nextAttempt: number;
  expiresInMs: number | null;
  hinted: boolean;
}): string {
  const why = `after ${codeInWords(args.code)}${args.hinted ? ' (as the server asked)' : ''}`;
  const expiry = args.expiresInMs === null ? '' : `, expires in ${humanDuration(args.expiresInMs)}`;
  return `waiting ${humanDuration(args.delayMs)} ${why} — attempt ${args.nextAttempt} next${expiry}`;
}

/** The fixed one-line summary of a delivery: "event acme/sensor-1 → api.example.com". */
export function deliverySummary(d: Pick<Delivery, 'kind' | 'qos' | 'tenant' | 'device' | 'endpoint'>): string {
  const kind = d.kind === 'telemetry' ? `telemetry QoS ${d.qos}` : d.kind;
  return `${kind} ${d.tenant}/${d.device} → ${d.endpoint}`;
}

/** A target in a few words: "POST https://api.example.com/in", "MQTT 5 mqtt://broker:1883 topic event/acme/sensor-1". */
export function targetInWords(target: Target): string {
  if (!isMqttTarget(target)) return `${target.method} ${target.url}`;
  return `MQTT ${target.protocolVersion} ${target.url} topic ${target.topic}`;
}

/** A delivery's attempts as the UI's activity list names them: "POST api.example.com", "PUBLISH broker:1883 event/acme/s-1". */
export function attemptsInWords(d: Pick<Delivery, 'endpoint' | 'target'>): string {
  return isMqttTarget(d.target) ? `PUBLISH ${d.endpoint} ${d.target.topic}` : `${d.target.method} ${d.endpoint}`;
}

/** The QoS an MQTT target publishes a delivery at: telemetry its own, events and command responses 1. */
export function mqttQos(d: Pick<Delivery, 'kind' | 'qos'>): 0 | 1 {
  return d.kind === 'telemetry' ? d.qos : 1;
}

/** The fixed details of a delivery, for the UI: target, message and policy in words (Markdown). */
export function deliveryDetails(d: Delivery): string {
  return [
    isMqttTarget(d.target)
      ? `**target** ${targetInWords(d.target)}, QoS ${mqttQos(d)}${d.target.credential ? `, credential "${d.target.credential}"` : ''} (attempt timeout ${humanDuration(d.target.timeout)})`
      : `**target** ${d.target.method} ${d.target.url} (attempt timeout ${humanDuration(d.target.timeout)})`,
    `**message** ${d.messageId}, ${d.contentType}, ${d.body.length} characters`,
    `**policy** ${describePolicy(d.policy)}`,
    ...(d.command ? [`**command** request ${d.command.requestId}, status ${d.command.status}`] : []),
  ].join('\n\n');
}
