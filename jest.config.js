// Tests run as ES modules (the Kubernetes client is ESM-only), transpiled by ts-jest;
// type errors are caught by `npm run typecheck`, not here, so transpiling stays fast.
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true }],
  },
};
