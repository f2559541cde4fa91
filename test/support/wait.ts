/**
 * Polls `read` until `done` holds for what it returned, or fails after `timeoutMs` with the last value:
 * for states that a real server reaches asynchronously (a delivery starts waiting, visibility catches up).
 */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
    last = await read();
  }
  return last;
}

/**
 * Polls a count until it reaches `target`, failing only when it has not grown for `stallMs`: for bulk work
 * whose pace is the machine's (1,000 deliveries on a loaded 2-core CI machine), where the test asserts that
 * all of it gets done and keeps moving, and how fast is a benchmark's figure. The test's own timeout bounds the whole.
 */
export async function waitForProgress(read: () => Promise<number>, target: number, stallMs: number, what: string): Promise<number> {
  let last = await read();
  let grewAt = Date.now();
  while (last < target) {
    if (Date.now() - grewAt > stallMs) throw new Error(`${what}: stuck at ${last} of ${target} for ${stallMs} ms (no progress)`);
    await new Promise((r) => setTimeout(r, 100));
    const now = await read();
    if (now > last) grewAt = Date.now();
    last = now;
  }
  return last;
}
