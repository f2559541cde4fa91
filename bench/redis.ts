import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../test/support/ports';

export interface Redis {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/**
 * A throwaway redis-server (Debian's package; `npm run bench` installs it) on a free loopback port, in a
 * temp dir: the append-only file on with its default fsync once a second, as BullMQ's guide asks for
 * durable jobs, and no RDB snapshots. Resolves once it accepts connections.
 */
export async function startRedis(): Promise<Redis> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-bench-redis-'));
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`redis-server exited (${signal ?? code}) before it listened:\n${log}`)));
    const read = (chunk: Buffer) => {
      log += chunk.toString();
      if (/Ready to accept connections/.test(log)) resolve();
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
  });
  return {
    port,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
