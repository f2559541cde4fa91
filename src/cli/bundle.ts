import type { Command } from 'commander';
import { buildWorkflowBundle } from '../bundle';

export function registerBundle(program: Command): void {
  program
    .command('bundle')
    .description('pre-build the workflow bundle that production workers load (REDELIVER_WORKFLOW_BUNDLE) instead of bundling at start')
    .requiredOption('--out <file>', 'where to write the bundle')
    .option('--tracing', 'include the OpenTelemetry workflow interceptors (for workers with OTEL_TRACES_EXPORTER set)')
    .option('--encryption', 'include the failure converter that encrypts failure messages (for workers with REDELIVER_ENCRYPTION_KEYS set)')
    .addHelpText(
      'after',
      '\nExample:\n  $ redeliver bundle --out lib/workflow-bundle.js && REDELIVER_WORKFLOW_BUNDLE=lib/workflow-bundle.js redeliver worker',
    )
    .action(async (flags: { out: string; tracing?: boolean; encryption?: boolean }) => {
      await buildWorkflowBundle(flags.out, { tracing: !!flags.tracing, encryption: !!flags.encryption });
      const parts = [flags.tracing && 'tracing interceptors', flags.encryption && 'encrypted failures'].filter(Boolean);
      process.stderr.write(`workflow bundle${parts.length ? ` (with ${parts.join(', ')})` : ''} written to ${flags.out}\n`);
    });
}
