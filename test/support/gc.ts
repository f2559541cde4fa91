import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// V8 gives a context created after --expose-gc a `gc` global: jest's node needs no flag of its own
setFlagsFromString('--expose-gc');

/** A full garbage collection, now. */
export const collectGarbage = runInNewContext('gc') as () => void;

export interface GarbageCollector {
  /** Stops collecting. */
  stop(): void;
  /** How long the forced collections have held the event loop so far, in ms: a timer due meanwhile fires that much late. */
  pausedMs(): number;
}

/**
 * Collects garbage every `intervalMs` until stopped: what a busy worker does during a long attempt, and
 * what made an attempt lose its timeout (issue 15, finding 5). Each collection blocks the event loop, and a
 * timer due meanwhile fires late (on CI's loaded 2-core machine a 1 s timeout measured 2,664 ms under 20 a
 * second), so a bound on a duration measured meanwhile adds `pausedMs()`, the collections' own time.
 * The next one comes `intervalMs` after the last one ended, and at least twice its length later, so at most a
 * third of the time goes to them: a full collection of a large heap on a loaded machine can take longer than the
 * interval, and back to back they leave the process no time to work (the likely reason a 5 s test ran past its
 * 60 s limit on CI once; not reproduced).
 */
export function collectGarbageEvery(intervalMs = 50): GarbageCollector {
  let paused = 0;
  let timer: NodeJS.Timeout;
  const collect = () => {
    const started = performance.now();
    collectGarbage();
    const took = performance.now() - started;
    paused += took;
    timer = setTimeout(collect, Math.max(intervalMs, 2 * took));
  };
  timer = setTimeout(collect, intervalMs);
  return { stop: () => clearTimeout(timer), pausedMs: () => paused };
}
