import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import type { BridgeEvent } from '../../src/bridge/bridge';
import type { BridgeConfigInput } from '../../src/bridge/types';
import type { MqttCredential } from '../../src/transports/mqtt-credentials';
import { CLI } from './cli';
import { startMosquitto, type BrokerUser, type Mosquitto } from './mosquitto';

/** The bridges' login: they read every topic. */
export const BRIDGE_USER: BrokerUser = { username: 'bridge', password: 'bridge-secret', acl: ['read #'] };
/** A gateway publishing for its devices. */
export const GATEWAY_USER: BrokerUser = { username: 'gateway', password: 'gateway-secret', acl: ['write #'] };

/**
 * A Mosquitto for bridges. It keeps every message a session has not acknowledged: by default Mosquitto drops a
 * session's QoS 1 messages past 1,000 queued (`max_queued_messages`), which a bridge that is away would lose.
 * `settings`: more lines of mosquitto.conf.
 */
export function startBridgeBroker(settings: string[] = []): Promise<Mosquitto> {
  return startMosquitto({ users: [BRIDGE_USER, GATEWAY_USER], settings: ['max_queued_messages 0', ...settings] });
}

/** The credential `bridge`, bound to this broker, the operator's (the bridge's login is tenant `redeliver`'s). */
export function bridgeCredential(broker: Mosquitto): MqttCredential {
  return { username: BRIDGE_USER.username, password: BRIDGE_USER.password, brokers: [broker.url], tenants: ['redeliver'] };
}

/** An MQTT 5 client of the gateway's, to publish with. */
export function connectGateway(broker: Mosquitto): Promise<MqttClient> {
  return mqtt.connectAsync(broker.url, {
    protocolVersion: 5,
    username: GATEWAY_USER.username,
    password: GATEWAY_USER.password,
    reconnectPeriod: 0,
    clientId: `gateway${Math.random().toString(16).slice(2, 12)}`,
  });
}

/** One message to publish: its topic, payload and MQTT 5 user properties. */
export interface Publication {
  topic: string;
  payload: string;
  userProperties?: Record<string, string>;
}

/**
 * Publishes messages 0 … count-1 at QoS 1, 500 at a time, each acknowledged by the broker before the next 500;
 * `progress` is told how many are published before each 500 goes.
 */
export async function publishMany(
  client: MqttClient,
  count: number,
  message: (i: number) => Publication,
  progress: (published: number) => void = () => undefined,
): Promise<void> {
  for (let i = 0; i < count; i += 500) {
    progress(i);
    await Promise.all(
      Array.from({ length: Math.min(500, count - i) }, (_, k) => {
        const { topic, payload, userProperties } = message(i + k);
        return client.publishAsync(topic, payload, { qos: 1, ...(userProperties && { properties: { userProperties } }) });
      }),
    );
  }
}

export interface BridgeProcess {
  process: ChildProcess;
  /** What it reported (`--json`), so far. */
  events: BridgeEvent[];
  /** Resolves once it has subscribed; rejects if it exits first. */
  subscribed: Promise<void>;
  exited: Promise<number | string | null>;
  stderr(): string;
  /** Ends it with this signal (SIGKILL: no goodbye, nothing acknowledged after) and waits until it is gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * A real `redeliver bridge` process (the built CLI), with the configuration in a file and the credential
 * `bridge` in its environment. A separate process, so that a test can kill it outright.
 */
export function spawnBridge(options: { address: string; taskQueue: string; broker: Mosquitto; config: BridgeConfigInput }): BridgeProcess {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'redeliver-bridge-')), 'bridge.json');
  writeFileSync(file, JSON.stringify(options.config));
  const args = ['bridge', '--config', file, '--address', options.address, '--task-queue', options.taskQueue, '--json'];
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, REDELIVER_MQTT_CREDENTIALS_BRIDGE: JSON.stringify(bridgeCredential(options.broker)) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: BridgeEvent[] = [];
  let stderr = '';
  let pending = '';
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const subscribed = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const event = JSON.parse(line) as BridgeEvent;
        events.push(event);
        if (event.type === 'subscribed') resolve();
      }
    });
    void exited.then((code) => reject(new Error(`the bridge exited (${code}) before it subscribed:\n${stderr}`)));
  });
  subscribed.catch(() => undefined);
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    process: child,
    events,
    subscribed,
    exited,
    stderr: () => stderr,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
