import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clusterDown, clusterUp, readCluster, type ClusterState } from '../../src/cluster/cluster';
import { freePort } from './ports';
import { waitFor } from './wait';

/**
 * The first cluster start on a machine builds the Temporal server from source (about 10 minutes on 2 idle
 * cores, more on loaded ones); a test file waiting for another's build waits for it too.
 */
export const CLUSTER_START_TIMEOUT_MS = 40 * 60_000;

/** A folder for one test file's cluster, not made yet: `cluster up` makes it, open to PostgreSQL's own user. */
export function newClusterDir(): string {
  return path.join(tmpdir(), `redeliver-cluster-${randomUUID().slice(0, 8)}`);
}

export type TestCluster = ClusterState & { dir: string };

/** A Temporal cluster on PostgreSQL of the test file's own: two history hosts, no UI, on free ports. */
export async function startTestCluster(): Promise<TestCluster> {
  const dir = newClusterDir();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  try {
    return { dir, ...(await clusterUp({ dir, port: await freePort(), historyHosts: 2, uiPort: null, log })) };
  } catch (err) {
    await removeTestCluster(dir);
    throw err;
  }
}

/** Stops the cluster and removes its folder, data and logs. */
export async function removeTestCluster(dir: string | undefined): Promise<void> {
  if (!dir) return;
  await clusterDown(dir).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * How many shards each running history host owns now, by its own metrics (`numshards_gauge`, which it
 * updates whenever it (re)acquires shards: at start, on a membership change, and every few seconds).
 */
export async function historyShards(cluster: TestCluster): Promise<Record<string, number>> {
  const hosts = readCluster(cluster.dir).services.filter((s) => s.name.startsWith('history-'));
  const counts = await Promise.all(
    hosts.map(async (host) => {
      try {
        const text = await (await fetch(`http://127.0.0.1:${host.metricsPort}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith('numshards_gauge'));
        return [host.name, line ? Number(line.split(' ').pop()) : 0] as const;
      } catch {
        return [host.name, 0] as const;
      }
    }),
  );
  return Object.fromEntries(counts);
}

/** Polls the history hosts' shard counts until `done` holds for them. */
export function waitForShards(
  cluster: TestCluster,
  done: (shards: Record<string, number>) => boolean,
  what: string,
): Promise<Record<string, number>> {
  return waitFor(() => historyShards(cluster), done, 120_000, what);
}
