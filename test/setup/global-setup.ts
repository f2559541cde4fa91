import { mkdtempSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { buildWorkflowBundle } from '../../src/bundle';
import { startDevServer } from '../../src/dev/dev-server';
import { freePort } from '../support/ports';

/**
 * One real Temporal dev server and one workflow bundle for the whole run: the workflow and integration
 * tiers name this module both, and Jest runs it once, only when a test of either is in the run.
 */
export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-test-'));
  const server = await startDevServer({
    port: await freePort(),
    uiPort: null,
    logFile: path.join(dir, 'temporal.log'),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} },
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, code);
  // workers with keys need the failure converter that encrypts in their bundle (src/worker.ts refuses one without)
  const encryptedBundlePath = path.join(dir, 'workflow-bundle-encrypted.js');
  await buildWorkflowBundle(encryptedBundlePath, { encryption: true });
  process.env.REDELIVER_TEST_BUNDLE_ENCRYPTED = encryptedBundlePath;
  process.env.REDELIVER_TEST_ADDRESS = server.address;
  process.env.REDELIVER_TEST_BUNDLE = bundlePath;
  process.env.REDELIVER_TEST_DIR = dir;
  (globalThis as { __temporal?: typeof server }).__temporal = server;
}
