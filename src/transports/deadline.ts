/**
 * The deadline of one call (a command subscription's callback; a delivery's attempt has the same rule in its
 * dispatch handler, sendHttp): the call's own timer and AbortController, held and cleared by the call.
 *
 * Not `AbortSignal.any([cancel, AbortSignal.timeout(ms)])`: Node holds the sources of an `any` signal only
 * weakly, so once the attempt is under way nothing else references the timeout signal, a garbage collection
 * takes it, and it never fires — the attempt then ran until Temporal's own limit (issue 15, finding 5).
 */
export interface AttemptDeadline {
  /** Aborts when the timeout passes, or at once when the cancellation signal aborts. */
  readonly signal: AbortSignal;
  /**
   * `work`'s result, or a rejection with the abort reason as soon as the signal aborts, whichever comes
   * first: the attempt ends on time even where the signal cannot reach (undici lets a request aborted while
   * its connection is being opened — DNS, TCP, TLS — wait for that connect, up to its own 10 s timeout).
   */
  race<T>(work: Promise<T>): Promise<T>;
  /** Stops the timer and lets go of the cancellation signal: call it when the attempt ends, however it ends. */
  clear(): void;
}

export function attemptDeadline(timeoutMs: number, cancel?: AbortSignal): AttemptDeadline {
  const controller = new AbortController();
  const signal = controller.signal;
  const cancelled = () => controller.abort(cancel?.reason);
  const timer = setTimeout(
    () => controller.abort(new DOMException(`the attempt did not finish within ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  );
  if (cancel?.aborted) cancelled();
  else cancel?.addEventListener('abort', cancelled, { once: true });
  return {
    signal,
    race: (work) =>
      new Promise((resolve, reject) => {
        const aborted = () => reject(signal.reason);
        if (signal.aborted) aborted();
        else signal.addEventListener('abort', aborted, { once: true });
        // settling an already rejected promise is a no-op: a late failure of `work` is handled, not unhandled
        work.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
      }),
    clear: () => {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', cancelled);
    },
  };
}
