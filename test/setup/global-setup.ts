import { mkdtempSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Config } from '@jest/types';
import { bundleWorkflowCode } from '@temporalio/worker';
import { ensureGoBuild, TEMPORAL_SERVER_BUILD } from '../../src/cluster/go-build';
import { buildWorkflowBundle } from '../../src/bundle';
import { startDevServer } from '../../src/dev/dev-server';
import { freePort } from '../support/ports';

/**
 * One real Temporal dev server and one workflow bundle for the whole run: the workflow and integration
 * tiers name this module both, and Jest runs it once, only when a test of either is in the run.
 */
export default async function globalSetup(globalConfig: Config.GlobalConfig): Promise<void> {
  // on a fresh clone the cluster tests' server is built from source (about 10 minutes): once, before any test
  // runs, so that no test's timeout includes it and no test shares the cores with it
  if (runsClusterTests(globalConfig)) await ensureGoBuild(TEMPORAL_SERVER_BUILD, (line) => process.stderr.write(`${line}\n`));
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-test-'));
  const server = await startDevServer({
    port: await freePort(),
    uiPort: null,
    // the suite's server keeps Temporal's default matcher; the fairness tests start one of their own with it on
    // (test/integration/endpoints/fairness.test.ts). With the new matcher here, two loaded full runs failed tests that time
    // retries (a 1.5 s gap for 1.4 s, 137 retries in 10 s for 120) and saw gRPC retries outlive their connection
    // ("Channel has been shut down"); not traced further, so it stays off where it was not measured.
    fairness: false,
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

/** Whether test/integration/cluster/ is in the run: the integration tier is (`--selectProjects` names it, or none) and the paths asked for match it. */
function runsClusterTests(globalConfig: Config.GlobalConfig): boolean {
  const select = process.argv.indexOf('--selectProjects');
  if (select >= 0 && !process.argv.slice(select + 1).includes('integration')) return false;
  return new RegExp(globalConfig.testPathPattern, 'i').test(path.join(globalConfig.rootDir, 'test', 'cluster', 'faults.test.ts'));
}
