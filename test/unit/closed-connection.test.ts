import { freePort } from '../../src/dev/ports';
import { connectClient } from '../../src/temporal/sdk-adapter';

/*
 * A call still retrying when its connection closes (its caller stopped waiting) must end, not fire into the
 * closed channel: the SDK's retry timer would then throw "Channel has been shut down" outside any promise,
 * an uncaught exception (it failed whole test files of loaded runs). Loopback only: a port nothing listens on.
 */

test('a call retrying when its connection closes ends as cancelled, and nothing throws afterwards', async () => {
  const port = await freePort();
  const connection = await connectClient({ address: `127.0.0.1:${port}`, lazy: true, retryAttempts: 100 });
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const call = connection.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: { code?: number; details?: string }) => err,
    );
    // refused at once, and retried on a timer (100 ms and up): close while a retry waits
    await new Promise((resolve) => setTimeout(resolve, 300));
    await connection.close();
    expect(await call).toMatchObject({ code: 1, details: 'the connection was closed' });
    // every retry timer the SDK had set has fired by now (the longest is its first delay, jittered)
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});
