import type { Command } from 'commander';
import { humanDuration } from '../delivery/summary';
import { InvalidInputError } from '../errors';
import type { SubscriptionInput, SubscriptionResult, SubscriptionStatus } from '../subscription/types';
import { Subscriptions } from '../client/subscriptions';
import { connect, withConnectionFlags, type ConnectionFlags } from './connection';
import { emit } from './output';

interface StartFlags extends ConnectionFlags {
  tenant: string;
  device: string;
  broker: string;
  topic?: string;
  protocolVersion?: string;
  credential?: string;
  clientId?: string;
  callback: string;
  callbackHeader: string[];
  callbackTimeout?: string;
  responseTopic?: string;
  downtimeThreshold?: string;
  initial?: string;
  max?: string;
  jitter?: string;
  json?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

async function withSubscriptions<T>(flags: ConnectionFlags, run: (s: Subscriptions) => Promise<T>): Promise<T> {
  const redeliver = await connect(flags);
  try {
    return await run(new Subscriptions(redeliver.client, { taskQueue: redeliver.taskQueue }));
  } finally {
    await redeliver.close();
  }
}

export function registerSubscribe(program: Command): void {
  const subscribe = program
    .command('subscribe')
    .description("device command subscriptions: keep a device's MQTT command subscription alive and hand each command to an HTTP callback");

  withConnectionFlags(
    subscribe
      .command('start')
      .description('start (or find running) the command subscription of one device')
      .requiredOption('--tenant <tenant>', 'tenant id')
      .requiredOption('--device <device>', 'device id')
      .requiredOption('--broker <url>', 'mqtt:// or mqtts:// broker')
      .requiredOption('--callback <url>', 'http(s) URL each command is POSTed to')
      .option('--topic <filter>', 'topic filter (default command/{tenant}/{device}/req/#)')
      .option('--protocol-version <5|3.1.1>', 'MQTT version (default 5)')
      .option('--credential <name>', 'name of a credential the worker resolves (docs/mqtt.md, "Credentials")')
      .option('--client-id <id>', 'client id of the subscription, starting with <tenant>/ (default: a random one, kept for its life)')
      .option('--callback-header <name:value>', 'extra header on callback requests (repeatable)', collect, [])
      .option('--callback-timeout <duration>', 'callback request timeout (default 10s)')
      .option('--response-topic <topic>', 'topic of the command responses (default command///res/{requestId}/{status})')
      .option('--downtime-threshold <duration>', 'a spell without a subscription longer than this is downtime (default 1m)')
      .option('--initial <duration>', 'resubscribe backoff: first window (default 200ms)')
      .option('--max <duration>', 'resubscribe backoff: cap of the window (default 300s)')
      .option('--jitter <strategy>', 'resubscribe backoff: full | equal | decorrelated | none (default full)')
      .option('--json', 'print JSON'),
  )
    .addHelpText(
      'after',
      `
Example:
  $ REDELIVER_MQTT_CREDENTIALS_HUB='{"username":"sensor-1@acme","password":"…","brokers":["mqtts://hub.example.com:8883"],"tenants":["acme"]}' redeliver worker &
  $ redeliver subscribe start --tenant acme --device sensor-1 --broker mqtts://hub.example.com:8883 \\
      --credential hub --callback https://app.example.com/commands`,
    )
    .action((flags: StartFlags) =>
      withSubscriptions(flags, async (subscriptions) => {
        const handle = await subscriptions.start(inputFromFlags(flags));
        const status = await handle.status();
        emit(!!flags.json, { subscriptionId: handle.subscriptionId, created: handle.created, state: status.state }, () =>
          handle.created ? `started ${handle.subscriptionId}` : `already running: ${handle.subscriptionId} (${status.state})`,
        );
      }),
    );

  withConnectionFlags(
    subscribe
      .command('status')
      .argument('<subscriptionId>', 'subscription/<tenant>/<device>, or <tenant>/<device>')
      .description('state, commands and downtime of a subscription')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver subscribe status acme/sensor-1 --json')
    .action((id: string, flags: ConnectionFlags & { json?: boolean }) =>
      withSubscriptions(flags, async (subscriptions) => {
        const status = await subscriptions.getHandle(id).status();
        emit(!!flags.json, status, () => formatSubscription(status));
      }),
    );

  withConnectionFlags(
    subscribe
      .command('stop')
      .argument('<subscriptionId>', 'subscription/<tenant>/<device>, or <tenant>/<device>')
      .description('unsubscribe for good; commands already received still go to the callback')
      .option('--reason <text>', 'why, kept in its result')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', '\nExample:\n  $ redeliver subscribe stop acme/sensor-1 --reason "device retired"')
    .action((id: string, flags: ConnectionFlags & { json?: boolean; reason?: string }) =>
      withSubscriptions(flags, async (subscriptions) => {
        const result = await subscriptions.getHandle(id).stop(flags.reason ?? '');
        emit(!!flags.json, result, () => formatResult(result));
      }),
    );
}

/** Flags → SubscriptionInput. Values stay as typed so validation can name what was wrong. */
export function inputFromFlags(flags: StartFlags): SubscriptionInput {
  const headers: Record<string, string> = {};
  for (const h of flags.callbackHeader) {
    const i = h.indexOf(':');
    if (i <= 0)
      throw new InvalidInputError([{ field: '--callback-header', message: `must be name:value, got ${JSON.stringify(h)}` }], 'flags');
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  const broker = {
    url: flags.broker,
    ...(flags.topic && { topic: flags.topic }),
    ...(flags.protocolVersion && { protocolVersion: flags.protocolVersion as '5' | '3.1.1' }),
    ...(flags.credential && { credential: flags.credential }),
    ...(flags.clientId && { clientId: flags.clientId }),
  };
  const policy = {
    ...(flags.initial && { initial: flags.initial }),
    ...(flags.max && { max: flags.max }),
    ...(flags.jitter && { jitter: flags.jitter as 'full' }),
  };
  return {
    tenant: flags.tenant,
    device: flags.device,
    broker,
    callback: {
      url: flags.callback,
      ...(Object.keys(headers).length && { headers }),
      ...(flags.callbackTimeout && { timeout: flags.callbackTimeout }),
    },
    ...(flags.responseTopic && {
      response: {
        target: {
          url: flags.broker,
          topic: flags.responseTopic,
          ...(flags.protocolVersion && { protocolVersion: flags.protocolVersion as '5' | '3.1.1' }),
          ...(flags.credential && { credential: flags.credential }),
        },
      },
    }),
    ...(Object.keys(policy).length && { policy }),
    ...(flags.downtimeThreshold && { downtimeThreshold: flags.downtimeThreshold }),
  };
}

/** The status as lines (emit keeps what topics, reasons and summaries say on theirs). */
export function formatSubscription(s: SubscriptionStatus): string[] {
  const c = s.commands;
  const lines = [
    s.subscriptionId,
    `  ${s.summary}`,
    `  state       ${s.state}`,
    `  broker      ${s.endpoint} topic ${s.topic}`,
    `  commands    ${c.received} received, ${c.handed} handed over, ${c.responded} answered, ${c.failed} failed, ${c.queued} queued`,
    `  downtime    ${downtimeInWords(s.downtime)}`,
  ];
  if (s.subscribedSince) lines.push(`  since       ${s.subscribedSince}`);
  if (s.nextAttemptAt) lines.push(`  next        ${s.nextAttemptAt}`);
  if (s.lastError) lines.push(`  last error  ${s.lastError.class} ${s.lastError.code}: ${s.lastError.reason}`);
  return lines;
}

function formatResult(r: SubscriptionResult): string[] {
  return [`${r.subscriptionId}: ${r.outcome} — ${r.reason}`, `  downtime    ${downtimeInWords(r.downtime)}`];
}

function downtimeInWords(d: SubscriptionStatus['downtime']): string {
  const periods = d.periods.length + (d.current?.countsAsDowntime ? 1 : 0);
  const now = d.current ? `; without a subscription for ${humanDuration(d.current.durationMs)} now` : '';
  return `${humanDuration(d.totalMs)} in ${periods} period(s) longer than ${humanDuration(d.thresholdMs)}, ${d.outages} outage(s) since ${d.since}${now}`;
}
