// Three tiers, one Jest project each; `jest` runs them all, `jest --selectProjects <name>` one (package.json).
// Jest runs a project's globalSetup only when a test of that project is in the run, and a setup module named
// by two projects once: the unit tier starts nothing, and a full run starts one dev server for the other two.
// .temporal holds the installed CLI and the Go builds of the cluster's server (module cache included): not the project's code
const base = { testEnvironment: 'node', transform: { '^.+\\.ts$': 'ts-jest' }, modulePathIgnorePatterns: ['<rootDir>/.temporal/'] };
// one Temporal dev server and one workflow bundle for the run
const server = { globalSetup: '<rootDir>/test/setup/global-setup.ts', globalTeardown: '<rootDir>/test/setup/global-teardown.ts' };

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    // pure modules: no server, no Temporal CLI, no Java; only the npm dependencies
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    // the workflows with stubbed activities on TestWorkflowEnvironment, and the replay of recorded histories
    { ...base, ...server, displayName: 'workflow', testMatch: ['<rootDir>/test/workflow/**/*.test.ts'] },
    // real endpoints, brokers, CLI, UI, faults and days on the time-skipping server
    {
      ...base,
      ...server,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
  ],
  reporters: ['default', '<rootDir>/test/setup/summary-reporter.js'],
  testTimeout: 60_000,
  maxWorkers: 2,
};
