import { seededRandom } from '../policy/random';
import { runContention } from './contention';
import { backoffOf, type Strategy } from './strategies';

export interface ExperimentOptions {
  clients: number;
  /** Independent runs averaged per strategy. */
  runs: number;
  strategies: readonly Strategy[];
  /** The article's base: the first window is 2 × base. Default 5 ms. */
  baseMs?: number;
  /** The article's cap on the window. Default 2 s. */
  capMs?: number;
  /** A floor after jitter, as a policy's `min`; the article has none. Default 0. */
  minMs?: number;
  /** Same seed, same numbers. Default 1. */
  seed?: number;
}

/** One strategy's means over the runs. */
export interface StrategyResult {
  strategy: Strategy;
  clients: number;
  runs: number;
  /** Mean write calls per run. */
  calls: number;
  /** Mean time until every client had succeeded, ms. */
  completionMs: number;
}

/** Brooker's experiment: `runs` contentions of `clients` clients per strategy, averaged. */
export function runExperiment(options: ExperimentOptions): StrategyResult[] {
  const { clients, runs, baseMs = 5, capMs = 2_000, minMs = 0, seed = 1 } = options;
  return options.strategies.map((strategy) => {
    // a stream of draws per (seed, strategy, clients): a strategy's numbers do not depend on which others ran
    const random = seededRandom(mix(seed, hashString(strategy), clients));
    const backoff = backoffOf(strategy, baseMs, capMs, minMs);
    let calls = 0;
    let completionMs = 0;
    for (let run = 0; run < runs; run++) {
      const result = runContention({ clients, backoff, random });
      calls += result.calls;
      completionMs += result.completionMs;
    }
    return { strategy, clients, runs, calls: calls / runs, completionMs: Math.round((completionMs / runs) * 10) / 10 };
  });
}

function hashString(s: string): number {
  let h = 2_166_136_261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16_777_619);
  return h >>> 0;
}

function mix(...values: number[]): number {
  let h = 0x9e3779b9;
  for (const v of values) h = Math.imul(h ^ (v >>> 0), 0x85ebca6b) ^ (h >>> 13);
  return h >>> 0;
}
