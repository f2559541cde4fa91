import { startFlakyEndpoint, type FlakyEndpoint } from '../../src/demo/flaky-endpoint';
import { startReceiver, type Receiver } from './receiver';
import { startHarness, testAddress, type Harness, type HarnessOptions } from './temporal';

/** A worker harness and a flaky endpoint for the tests of one file: started before them, stopped after. */
export function useHarnessAndEndpoint(options: HarnessOptions = {}): { readonly h: Harness; readonly endpoint: FlakyEndpoint } {
  const env = {} as { h: Harness; endpoint: FlakyEndpoint };
  beforeAll(async () => {
    [env.h, env.endpoint] = await Promise.all([startHarness(testAddress(), options), startFlakyEndpoint()]);
  });
  afterAll(async () => {
    await env.h?.stop();
    await env.endpoint?.close();
  });
  return env;
}

/** A worker harness and a scripted receiver (support/receiver.ts) for the tests of one file: started before them, stopped after. */
export function useHarnessAndReceiver(options: HarnessOptions = {}): { readonly h: Harness; readonly receiver: Receiver } {
  const env = {} as { h: Harness; receiver: Receiver };
  beforeAll(async () => {
    [env.h, env.receiver] = await Promise.all([startHarness(testAddress(), options), startReceiver()]);
  });
  afterAll(async () => {
    await env.h?.stop();
    await env.receiver?.close();
  });
  return env;
}
