/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': 'ts-jest' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // one Temporal dev server and one workflow bundle for the whole run
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  reporters: ['default', '<rootDir>/test/setup/summary-reporter.js'],
  testTimeout: 60_000,
  maxWorkers: 2,
};
