/**
 * The MQTT bridge in a process of its own, for the bridge benchmark (bridge.ts): `node bridge-process.js
 * <address> <taskQueue> <setup JSON: { config, credential }>`. Says 'ready' once subscribed; on a
 * `{ acknowledged: n }` message answers `{ at }` (epoch ms) once it has acknowledged n messages to the broker,
 * and on 'connected-at' when it had connected to the broker; answers 'stats' like the workers
 * (process-stats.ts). Its own process, so that its CPU time is its own.
 */
import { Bridge } from '../src/bridge/bridge';
import type { BridgeConfigInput } from '../src/bridge/types';
import { Redeliver } from '../src/client/index';
import type { MqttCredential } from '../src/transports/mqtt-credentials';
import { validateBridgeConfig } from '../src/validation/bridge';
import { answerStats } from './process-stats';

export interface BridgeSetup {
  config: BridgeConfigInput;
  /** The credential the configuration names. */
  credential: MqttCredential;
}

async function main(): Promise<void> {
  const [address, taskQueue, setupJson] = process.argv.slice(2);
  if (!address || !taskQueue || !setupJson) throw new Error('usage: bridge-process <address> <taskQueue> <setup JSON>');
  const setup = JSON.parse(setupJson) as BridgeSetup;
  const config = validateBridgeConfig(setup.config);
  const redeliver = await Redeliver.connect({ address, taskQueue, env: {} });
  let connectedAt = 0;
  const bridge = new Bridge({
    config,
    batcher: redeliver.batcher(config.batch),
    credentials: () => setup.credential,
    onEvent: (e) => void (e.type === 'connected' && (connectedAt = Date.now())),
  });
  answerStats();
  process.on('message', (msg) => {
    if (msg === 'connected-at') return void process.send?.({ at: connectedAt });
    const target = (msg as { acknowledged?: number }).acknowledged;
    if (typeof target !== 'number') return;
    const check = setInterval(() => {
      if (bridge.stats.acknowledged < target) return;
      clearInterval(check);
      process.send?.({ at: Date.now() });
    }, 5);
  });
  process.once('SIGTERM', () => void bridge.stop().then(() => redeliver.close().then(() => process.exit(0))));
  await bridge.start();
  process.send?.('ready');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
