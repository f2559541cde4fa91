import type { BatcherOptions } from '../batching/batcher';
import type { MqttTls } from '../transports/mqtt';
import type { MessageMapping } from './message';

/** What `redeliver bridge` reads from its configuration file and flags (docs/mqtt.md, "The MQTT bridge"). */
export interface BridgeConfigInput {
  /** `mqtt(s)://host:port`, or the broker with how to log in and keep the session. */
  broker: string | BridgeBrokerInput;
  /** The shared subscription's group: bridges of one group share the messages. Default `redeliver`. */
  group?: string;
  /** Topic filters, without `$share/…`. Default: Hono's upstream topics that name tenant and device. */
  topics?: string[];
  /** The MQTT 5 user property holding a message's id. Default `message-id`. */
  messageIdProperty?: string;
  /** Where deliveries go: a delivery's `target` (a URL with `{tenant}`, `{device}`, … or an object). */
  target?: unknown;
  /** A target per kind, instead of `target` for that kind. */
  targets?: { telemetry?: unknown; event?: unknown; 'command-response'?: unknown };
  /** The deliveries' backoff policy (as a delivery's `policy`). Default: each kind's. */
  policy?: Record<string, unknown>;
  /** The batcher's options (Redeliver.batcher). */
  batch?: BatcherOptions;
  /** Messages the broker may send before the first is acknowledged (MQTT 5 Receive Maximum). Default 4,000. */
  receiveMaximum?: number;
}

export interface BridgeBrokerInput {
  url: string;
  /** A credential name, resolved as a worker resolves MQTT targets' (docs/mqtt.md, "Credentials"). */
  credential?: string;
  /** mqtts without a credential: the CA and server name to verify the broker with. */
  tls?: MqttTls;
  /** The bridge's MQTT client id, which names its session: keep it stable across restarts. Default `<group>-<host name>`. */
  clientId?: string;
  /** How long the broker keeps the session (and queues its messages) while the bridge is away. Default 1 day. */
  sessionExpiry?: number | string;
  /** MQTT keep-alive. Default 30 s. */
  keepalive?: number | string;
  /** Connecting and subscribing, each. Default 10 s. */
  timeout?: number | string;
}

/** A bridge's configuration, validated, every default filled in. */
export interface BridgeConfig {
  broker: {
    url: string;
    credential: string | null;
    tls: MqttTls | null;
    clientId: string;
    sessionExpirySeconds: number;
    keepaliveSeconds: number;
    timeoutMs: number;
  };
  group: string;
  topics: string[];
  mapping: MessageMapping;
  batch: BatcherOptions;
  receiveMaximum: number;
}
