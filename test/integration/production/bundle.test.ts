import { randomUUID } from 'node:crypto';
import { Client, WorkflowUpdateFailedError } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import { bundleEncryptsFailures } from '../../../src/bundle';
import { ConfigError } from '../../../src/config';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../../src/demo/flaky-endpoint';
import { parseKeyRing } from '../../../src/encryption/keys';
import { createWorker } from '../../../src/worker';
import { pauseUpdate } from '../../../src/contract';
import { startHarness, testAddress, type Harness } from '../../support/temporal';

// A pre-built workflow bundle carries its own failure converter: a worker with keys needs the encrypting one,
// or what its workflows throw (a refused control's reason, a workflow's failure) travels and is stored in plain text.

const RING = parseKeyRing(`k1:${Buffer.alloc(32, 7).toString('base64')}`);

test('the bundle built with encryption carries the encrypting failure converter; the plain one does not', async () => {
  expect(await bundleEncryptsFailures(process.env.REDELIVER_TEST_BUNDLE_ENCRYPTED!)).toBe(true);
  expect(await bundleEncryptsFailures(process.env.REDELIVER_TEST_BUNDLE!)).toBe(false);
});

test('a worker with keys refuses a bundle without it, naming REDELIVER_WORKFLOW_BUNDLE', async () => {
  const made = createWorker({
    address: testAddress(),
    taskQueue: `bundle-${randomUUID()}`,
    workflowBundlePath: process.env.REDELIVER_TEST_BUNDLE!,
    encryptionKeys: RING,
    tracing: null,
  });
  await expect(made).rejects.toThrow(ConfigError);
  await expect(made).rejects.toThrow(/REDELIVER_WORKFLOW_BUNDLE: .* has no encrypting failure converter.*redeliver bundle --encryption/);
});

describe('a worker with keys on the encrypted bundle', () => {
  let keyed: Harness;
  let endpoint: FlakyEndpoint;
  beforeAll(async () => {
    [keyed, endpoint] = await Promise.all([startHarness(testAddress(), { encryptionKeys: RING }), startFlakyEndpoint()]);
  });
  afterAll(async () => {
    await keyed?.stop();
    await endpoint?.close();
  });

  test('a refused control reaches a client without the keys encrypted; the keyed client reads the reason', async () => {
    const handle = await keyed.redeliver.submit({
      kind: 'event',
      tenant: 'acme',
      device: 'sealed-bundle',
      messageId: randomUUID(),
      payload: { n: 1 },
      target: `${endpoint.url}/sealed-bundle?fail=99&status=503`,
      policy: { jitter: 'none', initial: '10m', min: '10m', max: '10m' },
    });
    await handle.pause('maintenance');
    await expect(handle.pause()).rejects.toThrow('the delivery is already paused');
    const connection = await connectClient({ address: testAddress() });
    try {
      const raw = new Client({ connection }).workflow.getHandle(handle.deliveryId);
      const refused = await raw.executeUpdate(pauseUpdate, { args: ['again'] }).catch((err: unknown) => err);
      // the reason is in the failure's encrypted attributes: a client without the codec cannot even read it as a failure
      expect(refused).not.toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String(refused)).toMatch(/Unknown encoding: binary\/encrypted/);
      expect(String(refused)).not.toContain('already paused');
    } finally {
      await connection.close();
      await handle.cancel();
    }
  });
});
