import { EventQueue } from './event-queue';
import type { Backoff } from './strategies';

export interface ContentionOptions {
  /** Clients that each want to write the row once. */
  clients: number;
  backoff: Backoff;
  /** Uniform draws in [0, 1) for the network and the backoff alike. */
  random: () => number;
  /** Mean one-way network delay, ms. Default 10, as in the article's simulator. */
  networkMeanMs?: number;
  /** Standard deviation of the network delay, ms. Default 2. */
  networkSdMs?: number;
}

export interface ContentionResult {
  /** Write calls the server received, failed ones included: the work. */
  calls: number;
  /** Virtual time until the last client learned that its write succeeded, ms. */
  completionMs: number;
}

type Message =
  | { to: 'server'; op: 'read'; client: number }
  | { to: 'client'; op: 'read'; client: number; version: number }
  | { to: 'server'; op: 'write'; client: number; version: number }
  | { to: 'client'; op: 'write'; client: number; ok: boolean };

/**
 * Optimistic concurrency on one row: every client reads the version, then writes with it; the server
 * accepts a write only if the version is still current. A client whose write lost backs off and reads
 * again. Discrete events in virtual time, so a hundred clients take milliseconds, not minutes.
 */
export function runContention(options: ContentionOptions): ContentionResult {
  const { clients, backoff, random, networkMeanMs = 10, networkSdMs = 2 } = options;
  const network = () => Math.abs(networkMeanMs + networkSdMs * standardNormal(random));
  const failures = new Array<number>(clients).fill(0);
  const previousDelay = new Array<number | null>(clients).fill(null);
  const queue = new EventQueue<Message>();
  let version = 0;
  let calls = 0;
  let now = 0;

  for (let client = 0; client < clients; client++) queue.push(network(), { to: 'server', op: 'read', client });
  for (let next = queue.pop(); next; next = queue.pop()) {
    now = next.at;
    const m = next.event;
    if (m.to === 'server' && m.op === 'read') {
      queue.push(now + network(), { to: 'client', op: 'read', client: m.client, version });
    } else if (m.to === 'client' && m.op === 'read') {
      queue.push(now + network(), { to: 'server', op: 'write', client: m.client, version: m.version });
    } else if (m.to === 'server' && m.op === 'write') {
      calls++;
      const ok = m.version === version;
      if (ok) version++;
      queue.push(now + network(), { to: 'client', op: 'write', client: m.client, ok });
    } else if (m.to === 'client' && m.op === 'write' && !m.ok) {
      const n = ++failures[m.client]!;
      const delay = backoff(n, previousDelay[m.client]!, random);
      previousDelay[m.client] = delay;
      queue.push(now + network() + delay, { to: 'server', op: 'read', client: m.client });
    }
  }
  return { calls, completionMs: now };
}

/** A draw from N(0, 1) (Box–Muller); 1 - u keeps the logarithm's argument above 0. */
function standardNormal(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}
