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

export interface LaneDecision {
  readonly runs: boolean;
  /** The loud line, when a node cannot run here. */
  readonly skipLine?: string;
  /** Whether the skip is a failure (CI=true). */
  readonly failure: boolean;
}

/** What a real-node file does, given whether a control plane runs, what the machine lacks, and CI. */
export function laneDecision(what: string, o: { clusterAvailable: boolean; blockers: readonly string[]; ci: boolean }): LaneDecision {
  if (!o.clusterAvailable) return { runs: false, failure: false };
  if (o.blockers.length === 0) return { runs: true, failure: false };
  return { runs: false, skipLine: `${what}: SKIPPED, this machine cannot run a real node; it lacks: ${o.blockers.join('; ')}`, failure: o.ci };
}

/** `describe` where a real node can run, else `describe.skip` after the loud line (and, under CI, a failing test). */
export function realNodeLane(what: string): jest.Describe {
  const decision = laneDecision(what, { clusterAvailable, blockers: clusterAvailable ? realNodeBlockers() : [], ci: process.env.CI === 'true' });
  if (decision.skipLine) process.stderr.write(`\n*** ${decision.skipLine} ***\n\n`);
  if (decision.failure) {
    test('a real node can run on this machine (CI=true)', () => {
      throw new Error(decision.skipLine);
    });
  }
  return decision.runs ? describe : describe.skip;
}
