/**
 * Whether the real-node tests run here (issue 33): on every machine that can
 * run a node, as part of `npm test` and CI, with no opt-in. Where one cannot
 * (not root, no cgroups, no overlayfs, ...: realNodeBlockers), each file
 * says so in one loud line naming what is missing and skips; under CI=true
 * that is a failure, as a missing control plane is (global-setup.ts). With
 * no control plane at all (DKV_SKIP_CLUSTER=1, or no Go toolchain outside
 * CI) global setup has already said why, and these skip with the rest.
 *
 * The files run one at a time (jest's maxWorkers: 1); each starts its own
 * control plane and node, and stops them in afterAll, leaving nothing behind.
 */
import { clusterAvailable } from '../cluster/kube.js';
import { realNodeBlockers } from '../cluster/real-node.js';

/** `describe` where a real node can run, else `describe.skip` after the loud line (and, under CI, a failing test). */
export function realNodeLane(what: string): jest.Describe {
  if (!clusterAvailable) return describe.skip;
  const blockers = realNodeBlockers();
  if (blockers.length === 0) return describe;
  const line = `${what}: SKIPPED, this machine cannot run a real node; it lacks: ${blockers.join('; ')}`;
  process.stderr.write(`\n*** ${line} ***\n\n`);
  if (process.env.CI === 'true') {
    test('a real node can run on this machine (CI=true)', () => {
      throw new Error(line);
    });
  }
  return describe.skip;
}
