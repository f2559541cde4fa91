import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Batcher } from '../batching/batcher';
import { classify, type Classification, type TransportOutcome } from '../classify';
import { OPERATOR_TENANT } from '../delivery/ids';
import type { DeliveryInput } from '../delivery/types';
import { InvalidInputError, RedeliverError, recognisedAcrossCopies } from '../errors';
import { backoffDelay, validatePolicy } from '../policy';
import { AddressGuard, RANGE_NAMES } from '../transports/address-guard';
import { connectMqtt, outcomeOfError, type MqttConnectContext } from '../transports/mqtt';
import { credentialsFromEnvironment, type CredentialResolver } from '../transports/mqtt-credentials';
import { AckQueue } from './acks';
import { deliveryOf, PUBACK } from './message';
import type { BridgeConfig } from './types';

/*
 * `redeliver bridge` (docs/mqtt.md, "The MQTT bridge"): messages from a broker's shared subscription become
 * deliveries through a batcher, and a QoS 1 message is acknowledged to the broker only once the batch
 * holding its delivery was durably accepted by Temporal. A bridge that dies loses nothing: the broker
 * resends what it had not acknowledged when the bridge's session comes back.
 */

/** What a running bridge has done since it started. */
export interface BridgeStats {
  received: number;
  /** Received with the DUP flag: sent before, to a connection that ended before acknowledging it. */
  redelivered: number;
  /** Whose delivery was durably accepted. */
  accepted: number;
  /** That can never become a delivery (acknowledged with a reason code, and reported). */
  refused: number;
  acknowledged: number;
}

export type BridgeEvent =
  | { type: 'connected'; clientId: string; sessionPresent: boolean }
  | { type: 'subscribed'; filters: string[] }
  | { type: 'refused'; topic: string; reason: string; reasonCode: number }
  | { type: 'submit-failing'; reason: string }
  | { type: 'submit-recovered' }
  | { type: 'disconnected'; reason: string; retryInMs: number }
  | { type: 'stopped'; stats: BridgeStats };

export interface BridgeOptions {
  config: BridgeConfig;
  /** Where deliveries go: `redeliver.batcher(config.batch)`. Closed by the bridge when it stops. */
  batcher: Pick<Batcher, 'submit' | 'close'>;
  /** Resolves the broker's credential name. Default: the environment, as a worker resolves MQTT targets'. */
  credentials?: CredentialResolver;
  onEvent?: (event: BridgeEvent) => void;
}

/** The broker refused the bridge in a way that retrying cannot mend (a credential, an ACL, a ban). */
export class BridgeRefusedError extends RedeliverError {
  static {
    recognisedAcrossCopies(this, 'BridgeRefusedError');
  }
  override readonly name = 'BridgeRefusedError';
}

/** Reconnects and resubmits: the retry guide's full jitter from 200 ms, capped at 30 s for a long outage. */
const RETRY_POLICY = validatePolicy({ max: '30s' }, { kind: 'event' });
/** Given to mqtt.js for a QoS 1 message: it then sends no PUBACK of its own (the AckQueue sends it later). */
const ACKED_BY_BRIDGE = new Error('acknowledged by the bridge once its delivery is accepted');

interface Connection {
  client: MqttClient | undefined;
  acks: AckQueue;
  gone: boolean;
  /** Resolves with why the connection ended. */
  ended: Promise<TransportOutcome>;
  end(outcome: TransportOutcome): void;
}

type Submitted = 'accepted' | 'abandoned' | { refused: string };

export class Bridge {
  readonly stats: BridgeStats = { received: 0, redelivered: 0, accepted: 0, refused: 0, acknowledged: 0 };
  private readonly config: BridgeConfig;
  private readonly batcher: BridgeOptions['batcher'];
  private readonly context: MqttConnectContext;
  private readonly emit: (event: BridgeEvent) => void;
  private connection: Connection | undefined;
  private running: Promise<void> | undefined;
  private stopping = false;
  private failing = false;
  private readonly submits = new Set<Promise<void>>();
  private readonly sleepers = new Set<() => void>();

  constructor(options: BridgeOptions) {
    this.config = options.config;
    this.batcher = options.batcher;
    this.emit = options.onEvent ?? (() => undefined);
    // the broker is the operator's, not a producer's: the SSRF guard has nothing to keep it from
    this.context = { credentials: options.credentials ?? credentialsFromEnvironment(), guard: AddressGuard.parse([...RANGE_NAMES]) };
  }

  /** Connects and subscribes; rejects with a BridgeRefusedError when the broker refuses the bridge for good. */
  async start(): Promise<void> {
    const first = await this.connectUntilSubscribed();
    this.running = first ? this.keepConnected(first) : Promise.resolve();
    // a refusal while reconnecting reaches whoever waits in whenStopped(); nobody waiting is no crash
    this.running.catch(() => undefined);
  }

  /** Resolves once the bridge has stopped; rejects when, reconnecting, the broker refused it for good. */
  whenStopped(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /**
   * Stops taking messages (those that come now stay unacknowledged in the session, for the bridge's return),
   * starts what the batcher holds, acknowledges every message accepted by then, and disconnects.
   */
  async stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      for (const wake of this.sleepers) wake();
      await this.batcher.close();
      await Promise.allSettled([...this.submits]);
      const client = this.connection?.client;
      if (client && !this.connection!.gone) await new Promise<void>((resolve) => client.end(false, {}, () => resolve()));
      this.emit({ type: 'stopped', stats: { ...this.stats } });
    }
    await this.whenStopped().catch(() => undefined);
  }

  private async keepConnected(first: Connection): Promise<void> {
    let connection: Connection | undefined = first;
    while (connection && !this.stopping) {
      const outcome = await connection.ended;
      if (this.stopping) return;
      this.emit({ type: 'disconnected', reason: classify(outcome).reason, retryInMs: 0 });
      connection = await this.connectUntilSubscribed();
    }
  }

  /** Connects until subscribed, with backoff; undefined when stopped meanwhile. */
  private async connectUntilSubscribed(): Promise<Connection | undefined> {
    for (let attempt = 1; !this.stopping; attempt++) {
      const result = await this.connect();
      if (result.ok && this.stopping) result.connection.client!.end(false);
      if (result.ok) return this.stopping ? undefined : result.connection;
      if (result.failure.class === 'client') throw new BridgeRefusedError(`the broker refused the bridge: ${result.failure.reason}`);
      const retryInMs = backoffDelay(RETRY_POLICY, { attempts: attempt, previousDelay: null }, Math.random);
      this.emit({ type: 'disconnected', reason: result.failure.reason, retryInMs });
      await this.sleep(retryInMs);
    }
    return undefined;
  }

  /** One connection: the bridge's session resumed (or made), then its shared subscriptions. */
  private async connect(): Promise<{ ok: true; connection: Connection } | { ok: false; failure: Classification }> {
    const { broker } = this.config;
    const connection = this.newConnection();
    const connected = await connectMqtt(
      // the bridge reads every tenant's topics with the operator's login, not on behalf of one tenant
      { url: broker.url, protocolVersion: '5', credential: broker.credential, tenant: OPERATOR_TENANT, tls: broker.tls },
      this.context,
      {
        clientId: broker.clientId,
        // the session keeps what the bridge has not acknowledged, across a crash, until it comes back
        clean: false,
        sessionExpirySeconds: broker.sessionExpirySeconds,
        keepaliveSeconds: broker.keepaliveSeconds,
        timeoutMs: broker.timeoutMs,
        receiveMaximum: this.config.receiveMaximum,
        handleMessage: this.handlerFor(connection),
      },
    );
    if (!connected.ok) {
      connection.acks.close();
      return { ok: false, failure: classify(connected.outcome) };
    }
    const client = connected.client;
    // connectMqtt unrefs the socket (an idle pooled connection must not keep a worker alive): this one is the bridge's life
    (client.stream as { ref?: () => void }).ref?.();
    connection.client = client;
    this.connection = connection;
    this.watch(connection, client);
    this.emit({ type: 'connected', clientId: broker.clientId, sessionPresent: connected.connack.sessionPresent });
    const refused = await this.subscribe(client);
    if (!refused) return { ok: true, connection };
    client.end(true);
    return { ok: false, failure: refused };
  }

  private newConnection(): Connection {
    let end: (outcome: TransportOutcome) => void = () => undefined;
    const ended = new Promise<TransportOutcome>((resolve) => (end = resolve));
    const connection: Connection = {
      client: undefined,
      acks: new AckQueue((packetId, reasonCode) => this.acknowledge(connection, packetId, reasonCode)),
      gone: false,
      ended,
      end,
    };
    return connection;
  }

  /** Records why the connection ended, and forgets its acknowledgements: the broker resends what they were for. */
  private watch(connection: Connection, client: MqttClient): void {
    let ending: TransportOutcome | undefined;
    client.on('packetreceive', (packet) => {
      if (packet.cmd === 'disconnect') ending = { kind: 'mqtt5', packet: 'disconnect', reasonCode: packet.reasonCode ?? 0 };
    });
    client.on('error', (err) => {
      ending ??= outcomeOfError(err, true, 'disconnect', 0);
    });
    const closed = () => {
      connection.gone = true;
      connection.acks.close();
      connection.end(ending ?? { kind: 'mqtt-closed', message: 'the connection to the broker closed' });
    };
    if (client.connected) client.once('close', closed);
    else closed();
  }

  /** Subscribes to `$share/<group>/<filter>` for each filter at QoS 1; the classification of a refusal, if any. */
  private subscribe(client: MqttClient): Promise<Classification | undefined> {
    const filters = this.config.topics.map((f) => `$share/${this.config.group}/${f}`);
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => resolve(classify({ kind: 'timeout', afterMs: this.config.broker.timeoutMs })),
        this.config.broker.timeoutMs,
      );
      client.subscribe(filters, { qos: 1 }, (err, granted, packet) => {
        clearTimeout(timer);
        const denied = granted?.find((g) => g.qos >= 0x80);
        if (denied) {
          const reasonString = packet?.properties?.reasonString;
          return resolve(classify({ kind: 'mqtt5', packet: 'suback', reasonCode: denied.qos, ...(reasonString && { reasonString }) }));
        }
        if (err) return resolve(classify(outcomeOfError(err, true, 'suback', this.config.broker.timeoutMs)));
        this.emit({ type: 'subscribed', filters });
        resolve(undefined);
      });
    });
  }

  /**
   * mqtt.js hands over one PUBLISH at a time and sends a QoS 1 PUBACK once its handler calls back: calling
   * back at once (with ACKED_BY_BRIDGE, which stops that PUBACK) keeps the messages flowing into batches,
   * and the AckQueue sends each PUBACK once the delivery is accepted. Installed before connecting: a resumed
   * session's messages come right after the CONNACK, before connectMqtt has returned the client.
   */
  private handlerFor(connection: Connection): MqttClient['handleMessage'] {
    const take = (client: MqttClient, packet: IPublishPacket) => {
      connection.client ??= client;
      this.take(connection, packet);
    };
    return function (this: MqttClient, packet, done) {
      take(this, packet);
      done(packet.qos > 0 ? ACKED_BY_BRIDGE : undefined);
    };
  }

  private take(connection: Connection, packet: IPublishPacket): void {
    this.stats.received++;
    if (packet.dup) this.stats.redelivered++;
    const settle = packet.qos > 0 && packet.messageId !== undefined ? connection.acks.receive(packet.messageId) : undefined;
    // left unacknowledged: the session keeps it for the bridge's return
    if (this.stopping) return;
    const converted = deliveryOf(packet, this.config.mapping);
    if (!converted.ok) return this.refuse(packet.topic, converted.reason, converted.reasonCode, settle);
    const submitted = this.submit(converted.input, connection).then((result) => {
      if (result === 'accepted') settle?.(PUBACK.success);
      else if (result !== 'abandoned') this.refuse(packet.topic, result.refused, PUBACK.implementationSpecificError, settle);
    });
    const tracked = submitted.finally(() => this.submits.delete(tracked));
    this.submits.add(tracked);
  }

  /** Submits until the delivery is accepted, with backoff while Temporal fails; a refused delivery is not retried. */
  private async submit(input: DeliveryInput, connection: Connection): Promise<Submitted> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.batcher.submit(input);
        this.stats.accepted++;
        if (this.failing) this.emit({ type: 'submit-recovered' });
        this.failing = false;
        return 'accepted';
      } catch (err) {
        if (err instanceof InvalidInputError) return { refused: err.problems.map((p) => `${p.field} ${p.message}`).join('; ') };
        // the broker resends it to the next connection: nothing is lost by giving up here
        if (connection.gone || this.stopping) return 'abandoned';
        if (!this.failing) this.emit({ type: 'submit-failing', reason: (err as Error).message });
        this.failing = true;
        await this.sleep(backoffDelay(RETRY_POLICY, { attempts: attempt, previousDelay: null }, Math.random));
      }
    }
  }

  private refuse(topic: string, reason: string, reasonCode: number, settle: ((code: number) => void) | undefined): void {
    this.stats.refused++;
    this.emit({ type: 'refused', topic, reason, reasonCode });
    // resending it would never help: acknowledged, so that it does not hold up the messages after it
    settle?.(reasonCode);
  }

  private acknowledge(connection: Connection, packetId: number, reasonCode: number): void {
    const client = connection.client;
    if (!client?.connected || connection.gone) return;
    // mqtt.js has no public call for a PUBACK of our own (its handleMessage acknowledges one message at a time)
    (client as unknown as RawClient)._sendPacket({ cmd: 'puback', messageId: packetId, reasonCode });
    this.stats.acknowledged++;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}

interface RawClient {
  _sendPacket(packet: { cmd: 'puback'; messageId: number; reasonCode: number }): void;
}
