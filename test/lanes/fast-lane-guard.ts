/**
 * jest setupFiles of the fast lane (`npm run test:unit`, and the first lane
 * of `npm test`): nothing is built and no control plane runs there. A file
 * that reaches for either anyway was put in the wrong lane by
 * component-needs.ts's markers; binaries.ts and kube.ts read this flag and
 * fail it with a message that says so, instead of building for minutes or
 * skipping its tests.
 */
process.env.DKV_FAST_LANE = '1';
