// Tests run as ES modules (the Kubernetes client is ESM-only), transpiled by ts-jest;
// type errors are caught by `npm run typecheck`, not here, so transpiling stays fast.
// Two lanes (test/lanes/, run by `npm test` through lib/scripts/test-lanes.js):
// - fast (DKV_TEST_LANE=fast, `npm run test:unit`): files that need nothing built and no
//   control plane, so no global setup; seconds to minutes, before the full suite.
// - integration (the default, also for `npx jest <file>`): one real control plane
//   (etcd + kube-apiserver) serves the whole run (test/cluster/); files ordered by the
//   components they need, each waiting for its components' builds first.
// Global setup and the sequencer run from lib/ (compiled by `npm test`'s pretest build):
// jest loads them outside its transformer.
const fast = process.env.DKV_TEST_LANE === 'fast';

const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true }],
  },
  testTimeout: 60000,
  // One file at a time: some tests read the API server's own request counters, which are server-wide.
  maxWorkers: 1,
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
};

export default fast
  ? { ...common, setupFiles: ['<rootDir>/test/lanes/fast-lane-guard.ts'] }
  : {
    ...common,
    globalSetup: '<rootDir>/lib/test/cluster/global-setup.js',
    globalTeardown: '<rootDir>/lib/test/cluster/global-teardown.js',
    testSequencer: '<rootDir>/lib/test/lanes/sequencer.js',
    setupFilesAfterEnv: ['<rootDir>/test/lanes/await-components.ts'],
  };
