/**
 * `redeliver serve` in a process of its own, so that its CPU time is its own: `node api-process.js <address>
 * <taskQueue> <port> <key>`. The key may submit for every tenant; no rate limit; answers 'stats' (process-stats.ts).
 */
import { Redeliver } from '../src/client/index';
import { startApiServer } from '../src/api/server';
import { apiSettingsFromEnv } from '../src/config/api';
import { answerStats } from './process-stats';

async function main(): Promise<void> {
  const [address, taskQueue, port, key] = process.argv.slice(2);
  if (!address || !taskQueue || !port || !key) throw new Error('usage: api-process <address> <taskQueue> <port> <key>');
  const settings = apiSettingsFromEnv(
    {
      REDELIVER_API_KEYS: JSON.stringify([{ key, tenants: ['*'], roles: ['produce'] }]),
      REDELIVER_API_RATE_LIMIT: 'off',
      REDELIVER_API_BODY_LIMIT: String(16 * 1024 * 1024),
    },
    { port },
  );
  const redeliver = await Redeliver.connect({ address, taskQueue });
  const server = await startApiServer({ settings, redeliver, accessLog: () => undefined });
  answerStats();
  process.once('SIGTERM', () => void server.close().then(() => redeliver.close().then(() => process.exit(0))));
  process.send?.('ready');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
