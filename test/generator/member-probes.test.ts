/**
 * The etcd members' probes against what etcd's health endpoints do (etcd
 * 3.6, server/etcdserver/api/etcdhttp/health.go): `/livez` is a serializable
 * read of the member's own store; `/readyz` adds a linearizable read, which
 * goes through the leader and so waits out an election. Found on the real
 * node (test/node/scenarios.test.ts), where the kubelet runs the probes that
 * kwok only plays: with the kubelet's default timeout of 1 s, /readyz of a
 * healthy member timed out while leadership moved during an upgrade and on
 * a busy node.
 */
import { byRole, synth } from './support.js';

/** etcd's default --election-timeout; a candidate waits a randomized 1-2x of it before it stands. */
const ETCD_ELECTION_TIMEOUT_MS = 1000;

const member = () => byRole(synth({ size: 3 })).statefulSet.spec.template.spec.containers[0];

describe('the etcd members\' probes', () => {
  it('give /readyz long enough to wait out an election (two election timeouts), and no longer than its period', () => {
    const { readinessProbe } = member();
    expect(readinessProbe.httpGet.path).toBe('/readyz');
    expect(readinessProbe.timeoutSeconds * 1000).toBeGreaterThanOrEqual(2 * ETCD_ELECTION_TIMEOUT_MS);
    expect(readinessProbe.timeoutSeconds).toBeLessThanOrEqual(readinessProbe.periodSeconds);
  });

  it('give the liveness probe as long: a member is restarted only when /livez stays unanswered', () => {
    const { livenessProbe, readinessProbe } = member();
    expect(livenessProbe.httpGet.path).toBe('/livez');
    expect(livenessProbe.timeoutSeconds).toBeGreaterThanOrEqual(readinessProbe.timeoutSeconds);
  });
});
