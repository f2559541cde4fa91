/**
 * The recorded histories of MQTT paths (`npm run record-histories` calls this): a command subscription that
 * receives a command and answers it through a command-response delivery over MQTT, on a Mosquitto broker
 * started here (Debian package `mosquitto`; skipped with a note when it is not installed), and one that
 * is stopped while its broker is away.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import mqtt from 'mqtt';
import { Subscriptions } from '../client/subscriptions';
import { historyFileText } from '../temporal/sdk-adapter';

export const SUBSCRIPTION_SCENARIOS = ['subscription-commands', 'subscription-broker-away'] as const;

const MOSQUITTO = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => existsSync(p));

export async function recordSubscriptionHistories(
  client: Client,
  taskQueue: string,
  callbackUrl: string,
  outDir: string,
  only: string[],
): Promise<void> {
  const subscriptions = new Subscriptions(client, { taskQueue });
  const wanted = (name: string) => only.length === 0 || only.includes(name);
  const save = async (workflowId: string, file: string) => {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    writeFileSync(path.join(outDir, file), historyFileText(history));
    return file;
  };
  const until = async <T>(read: () => Promise<T>, done: (v: T) => boolean) => {
    for (let v = await read(); ; v = await read()) {
      if (done(v)) return v;
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  if (wanted('subscription-broker-away')) {
    const handle = await subscriptions.start({
      tenant: 'fixtures',
      device: 'device-away',
      broker: 'mqtt://127.0.0.1:1',
      callback: `${callbackUrl}/commands`,
      policy: { jitter: 'none', initial: '200ms', min: '200ms', max: '400ms' },
    });
    await until(
      () => handle.status(),
      (s) => s.holds >= 3 && s.state === 'waiting',
    );
    const result = await handle.stop('recorded');
    console.log(
      `subscription-broker-away: ${result.outcome} → ${await save(handle.subscriptionId, 'commandSubscriptionWorkflow_broker-away.json')}`,
    );
  }

  if (wanted('subscription-commands')) {
    if (!MOSQUITTO) {
      console.log('subscription-commands: skipped, mosquitto is not installed (apt-get install mosquitto)');
      return;
    }
    const broker = await startAnonymousMosquitto(MOSQUITTO);
    try {
      const handle = await subscriptions.start({
        tenant: 'fixtures',
        device: 'device-2',
        broker: broker.url,
        callback: `${callbackUrl}/commands`,
      });
      await until(
        () => handle.status(),
        (s) => s.state === 'subscribed',
      );
      const backend = await mqtt.connectAsync(broker.url, { protocolVersion: 5, reconnectPeriod: 0 });
      await backend.publishAsync('command/fixtures/device-2/req/r-1/switchOn', '{"on":true}', {
        qos: 1,
        properties: { contentType: 'application/json' },
      });
      await backend.endAsync();
      const status = await until(
        () => handle.status(),
        (s) => s.commands.responded === 1,
      );
      const responseId = status.recentCommands[0]!.responseId!;
      const response = await client.workflow.getHandle(responseId).result();
      const result = await handle.stop('recorded');
      const files = [
        await save(handle.subscriptionId, 'commandSubscriptionWorkflow_commands.json'),
        await save(responseId, 'deliveryWorkflow_mqtt-delivered.json'),
      ];
      console.log(`subscription-commands: ${result.outcome}, response ${(response as { outcome: string }).outcome} → ${files.join(', ')}`);
    } finally {
      broker.stop();
    }
  }
}

/** A throwaway broker: loopback, anonymous, nothing kept. */
async function startAnonymousMosquitto(binary: string): Promise<{ url: string; stop(): void }> {
  const port = await new Promise<number>((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
    s.once('error', reject);
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-record-'));
  const conf = path.join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `user ${userInfo().username}`,
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence false',
      'log_dest stderr',
      'log_type information',
      '',
    ].join('\n'),
  );
  const child = spawn(binary, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    setTimeout(() => reject(new Error('mosquitto did not start within 10 s')), 10_000).unref();
    let log = '';
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      if (/ running\b/.test(log)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`mosquitto exited (${code}):\n${log}`)));
  });
  return { url: `mqtt://127.0.0.1:${port}`, stop: () => void child.kill('SIGTERM') };
}
