import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Bridge, type BridgeEvent } from '../bridge/bridge';
import type { BridgeConfig, BridgeConfigInput } from '../bridge/types';
import { bridgeSettingsFromEnv } from '../config/bridge';
import { InvalidInputError } from '../errors';
import { validateBridgeConfig } from '../validation/bridge';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { printable } from './output';

interface BridgeFlags extends ConnectionFlags {
  config?: string;
  broker?: string;
  credential?: string;
  clientId?: string;
  group?: string;
  topic: string[];
  target?: string;
  messageIdProperty?: string;
  json?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** The flag that sets each field: a problem with a value that came from a flag names the flag too. */
const FLAGS: Record<string, keyof BridgeFlags> = {
  broker: 'broker',
  'broker.url': 'broker',
  'broker.credential': 'credential',
  'broker.clientId': 'clientId',
  group: 'group',
  topics: 'topic',
  target: 'target',
  messageIdProperty: 'messageIdProperty',
};

export function registerBridge(program: Command): void {
  withConnectionFlags(
    program
      .command('bridge')
      .description(
        "turn each message on an MQTT broker's topics (Eclipse Hono's layout) into a delivery, in batches, sharing the messages with the other bridges of its group; until SIGINT/SIGTERM",
      )
      .option('--config <file>', 'JSON configuration (docs/mqtt.md, "The MQTT bridge"); the flags below win over it')
      .option('--broker <url>', 'mqtt:// or mqtts:// broker')
      .option('--credential <name>', 'name of the MQTT credential to log in with (docs/mqtt.md, "Credentials")')
      .option(
        '--client-id <id>',
        "the bridge's MQTT client id, which names its session: stable across restarts (default <group>-<host name>)",
      )
      .option('--group <name>', 'shared subscription group: bridges of one group share the messages (default redeliver)')
      .option(
        '--topic <filter>',
        "topic filter, repeatable (default Hono's telemetry/+/+, event/+/+, command/+/+/res/+/+ and short forms)",
        collect,
        [],
      )
      .option('--target <url>', 'where deliveries go; {tenant}, {device}, {requestId}, {status} are filled in')
      .option('--message-id-property <name>', 'MQTT 5 user property holding the message id (default message-id)')
      .option('--json', 'print what the bridge does as JSON lines on stdout'),
  )
    .addHelpText(
      'after',
      `
Example:
  $ REDELIVER_MQTT_CREDENTIALS_BRIDGE='{"username":"bridge","password":"…","brokers":["mqtts://broker.example.com:8883"],"tenants":["redeliver"]}' \\
    redeliver bridge --broker mqtts://broker.example.com:8883 --credential bridge --client-id bridge-1 \\
      --target 'https://ingest.example.com/{tenant}/{device}'`,
    )
    .action(async (flags: BridgeFlags) => {
      // every flag, field and variable is checked before anything connects, and a bad one is named
      const config = configFrom(flags);
      bridgeSettingsFromEnv();
      const redeliver = await connect(flags);
      const bridge = new Bridge({ config, batcher: redeliver.batcher(config.batch), onEvent: (e) => report(e, !!flags.json) });
      const stop = () => void bridge.stop();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        await bridge.start();
        await bridge.whenStopped();
      } finally {
        await bridge.stop();
        await redeliver.close();
      }
    });
}

/** The configuration file, with the flags over it, validated. */
function configFrom(flags: BridgeFlags): BridgeConfig {
  const file: Partial<BridgeConfigInput> = flags.config === undefined ? {} : readConfig(flags.config);
  const fileBroker = typeof file.broker === 'string' ? { url: file.broker } : file.broker;
  const brokerFlags = {
    ...(flags.broker !== undefined && { url: flags.broker }),
    ...(flags.credential !== undefined && { credential: flags.credential }),
    ...(flags.clientId !== undefined && { clientId: flags.clientId }),
  };
  const broker = Object.keys(brokerFlags).length ? { ...fileBroker, ...brokerFlags } : file.broker;
  const raw = {
    ...file,
    ...(broker !== undefined && { broker }),
    ...(flags.group !== undefined && { group: flags.group }),
    ...(flags.topic.length > 0 && { topics: flags.topic }),
    ...(flags.target !== undefined && { target: flags.target }),
    ...(flags.messageIdProperty !== undefined && { messageIdProperty: flags.messageIdProperty }),
  };
  try {
    return validateBridgeConfig(raw);
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    const named = err.problems.map((p) => {
      const flag = FLAGS[p.field.replace(/\[\d+\]$/, '')];
      return flag && flags[flag] !== undefined && !(Array.isArray(flags[flag]) && !flags[flag].length)
        ? { ...p, field: `${p.field} (--${kebab(flag)})` }
        : p;
    });
    throw new InvalidInputError(named, 'bridge configuration');
  }
}

function readConfig(file: string): BridgeConfigInput {
  const refuse = (message: string): never => {
    throw new InvalidInputError([{ field: '--config', message }], 'bridge configuration');
  };
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    refuse(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as BridgeConfigInput;
  } catch (err) {
    return refuse(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** What the bridge does, for people on stderr (one line each, made safe for a terminal), or as JSON lines on stdout. */
function report(event: BridgeEvent, json: boolean): void {
  if (json) return void process.stdout.write(`${JSON.stringify(event)}\n`);
  process.stderr.write(`${printable(describe(event))}\n`);
}

function describe(e: BridgeEvent): string {
  switch (e.type) {
    case 'connected':
      return `bridge connected as ${e.clientId} (${e.sessionPresent ? 'its session resumed' : 'a new session'})`;
    case 'subscribed':
      return `bridge subscribed to ${e.filters.join(', ')}`;
    case 'refused':
      return `refused a message on ${e.topic} (PUBACK 0x${e.reasonCode.toString(16)}): ${e.reason}`;
    case 'submit-failing':
      return `deliveries cannot be started (${e.reason}): retrying with backoff; the messages stay unacknowledged meanwhile`;
    case 'submit-recovered':
      return 'deliveries start again';
    case 'disconnected':
      return `lost the broker (${e.reason}); reconnecting in ${(e.retryInMs / 1000).toFixed(1)} s`;
    case 'stopped': {
      const s = e.stats;
      return `bridge stopped: received ${s.received} (${s.redelivered} redelivered), accepted ${s.accepted}, refused ${s.refused}, acknowledged ${s.acknowledged}`;
    }
  }
}
