/** test/node/real-node-lane.ts: when the real-node tests run, skip loudly, or fail (CI). */
import { laneDecision } from './real-node-lane.js';

describe('the real-node lane', () => {
  test('runs wherever a control plane runs and the machine lacks nothing: no opt-in', () => {
    expect(laneDecision('real node', { clusterAvailable: true, blockers: [], ci: false })).toEqual({ runs: true, failure: false });
    expect(laneDecision('real node', { clusterAvailable: true, blockers: [], ci: true })).toEqual({ runs: true, failure: false });
  });

  test('a machine that cannot run a node: one line naming what it lacks, and under CI a failure', () => {
    const blockers = ['root (containerd and the kubelet mount, create namespaces and cgroups)', 'overlayfs (containerd\'s snapshotter)'];
    expect(laneDecision('real node', { clusterAvailable: true, blockers, ci: false })).toEqual({
      runs: false, failure: false,
      skipLine: 'real node: SKIPPED, this machine cannot run a real node; it lacks: root (containerd and the kubelet mount, create namespaces and cgroups); overlayfs (containerd\'s snapshotter)',
    });
    expect(laneDecision('real node', { clusterAvailable: true, blockers, ci: true }).failure).toBe(true);
  });

  test('no control plane at all: skipped with the other integration tests, which global setup announced (and failed under CI)', () => {
    expect(laneDecision('real node', { clusterAvailable: false, blockers: ['root'], ci: true })).toEqual({ runs: false, failure: false });
  });
});
