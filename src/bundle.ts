import { readFile, writeFile } from 'node:fs/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from './encryption/data-converter';
import { WORKFLOW_TRACING_MODULE } from './telemetry/tracing';

/** How the tracing interceptors' module is named inside a bundle (webpack keeps module paths). */
const TRACING_MODULE_ID = 'interceptors-opentelemetry/lib/workflow-interceptors';
/** … and the failure converter that encrypts failure messages (failureConverter). */
const FAILURE_CONVERTER_ID = 'encryption/failure-converter';

/**
 * Bundles the workflow code ahead of time, so that production workers start without webpack (STYLE: load
 * a pre-built bundle). With `tracing`, the OpenTelemetry workflow interceptors go in too: a worker with
 * tracing on needs such a bundle for workflow spans (its attempts are traced either way). With `encryption`,
 * the failure converter that encrypts failure messages: a worker with keys needs such a bundle.
 */
export async function buildWorkflowBundle(outFile: string, options: { tracing?: boolean; encryption?: boolean } = {}): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflows'),
    // a bundle carries its own failure converter: the worker's data converter does not reach into it
    ...(options.encryption && { failureConverterPath: FAILURE_CONVERTER_PATH }),
    ...(options.tracing && { workflowInterceptorModules: [WORKFLOW_TRACING_MODULE] }),
    logger: { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} },
  });
  await writeFile(outFile, code);
}

/** Whether a bundle carries the OpenTelemetry workflow interceptors. */
export async function bundleHasTracing(file: string): Promise<boolean> {
  return (await readFile(file, 'utf8')).includes(TRACING_MODULE_ID);
}

/** Whether a bundle carries the failure converter that encrypts failure messages. */
export async function bundleEncryptsFailures(file: string): Promise<boolean> {
  return (await readFile(file, 'utf8')).includes(FAILURE_CONVERTER_ID);
}
