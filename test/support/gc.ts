import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// V8 gives a context created after --expose-gc a `gc` global: jest's node needs no flag of its own
setFlagsFromString('--expose-gc');

/** A full garbage collection, now. */
export const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Collects garbage every `intervalMs` until the returned function is called: what a busy worker does
 * during a long attempt, and what made an attempt lose its timeout (issue 15, finding 5).
 */
export function collectGarbageEvery(intervalMs = 50): () => void {
  const timer = setInterval(collectGarbage, intervalMs);
  return () => clearInterval(timer);
}
