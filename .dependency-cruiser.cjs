/*
 * The direction of imports in src/ (CONTRIBUTING.md, "The contract and the direction of imports"). Unlike
 * eslint's import/no-cycle, dependency-cruiser sees type-only imports (tsPreCompilationDeps), so a circle made
 * of `import type` fails the lint too.
 */

/** The pure domain: what workflow code may import besides the contract; no I/O, and nothing of the layers above. */
const PURE = '^src/(policy|classify|delivery|subscription|endpoints)/';
/** Workflow code: the workflows and everything they import (eslint's determinism block lists the same folders). */
const WORKFLOW_CODE = '^src/(workflows|contract|policy|classify|delivery|subscription|endpoints)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle, type imports included: give what both sides share a home below them (often src/contract/).',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'contract-imports-pure-domain',
      severity: 'error',
      comment: "The contract imports only the pure domain and Temporal's definition helpers: every side imports it.",
      from: { path: '^src/contract/' },
      to: { pathNot: [`${PURE}`, '^src/contract/', 'node_modules/@temporalio/(common|workflow)/', 'node_modules/ms/'] },
    },
    {
      name: 'workflow-code-calls-activities-via-contract',
      severity: 'error',
      comment: "Workflow code knows activities by the contract's Activities interface, never by their implementation.",
      from: { path: WORKFLOW_CODE },
      to: { path: '^src/activities/' },
    },
    {
      name: 'worker-side-not-client',
      severity: 'error',
      comment: 'Activities and the worker do not import the client: what they share with it lives in the contract, or the starter.',
      from: { path: ['^src/activities/', '^src/worker-services/', '^src/workflows/', '^src/worker\\.ts$'] },
      to: { path: '^src/client/' },
    },
    {
      name: 'pure-domain-imports-no-layer-above',
      severity: 'error',
      comment: 'The pure domain is below the contract, the workflows and the activities.',
      from: { path: PURE },
      to: { path: '^src/(contract|workflows|activities)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
