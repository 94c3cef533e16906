// Tests run as ES modules (the Kubernetes client is ESM-only), transpiled by ts-jest;
// type errors are caught by `npm run typecheck`, not here, so transpiling stays fast.
// One real control plane (etcd + kube-apiserver) serves the whole run: see test/cluster/.
// Global setup runs from lib/ (compiled by `npm test`'s pretest build): jest loads it outside its transformer.
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true }],
  },
  globalSetup: '<rootDir>/lib/test/cluster/global-setup.js',
  globalTeardown: '<rootDir>/lib/test/cluster/global-teardown.js',
  testTimeout: 60000,
  // One file at a time: some tests read the API server's own request counters, which are server-wide.
  maxWorkers: 1,
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
};
