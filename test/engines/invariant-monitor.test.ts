/**
 * The invariant monitor every real-etcd scenario runs under
 * (test/support/invariant-monitor.ts), fed scripted membership readings: a
 * reading in which every failing member only timed out on the observer's
 * side (a stalled machine) is taken again before it counts; anything else
 * counts at once, and a stall that is still there on the second look is a
 * violation like any other.
 */
import type { MemberStatus, MembershipStatus } from '../../engines/membership.js';
import { InvariantMonitor } from '../support/invariant-monitor.js';

const TIMEOUT = 'http://127.0.0.1:1/v3/maintenance/status: TimeoutError: The operation was aborted due to timeout';
const REFUSED = 'connect ECONNREFUSED 127.0.0.1:1';

function membership(problems: (string | undefined)[]): MembershipStatus {
  const members: MemberStatus[] = problems.map((problem, i) => ({
    id: `m${i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: problem === undefined, leader: i === 0 && problem === undefined, alarms: [], ...(problem ? { problem } : {}),
  }));
  return { members, voters: members.length, healthyVoters: members.filter((m) => m.healthy).length, leaderId: 'm0', alarms: [] };
}

/** Runs the monitor over `script` (one membership per read; the last repeats) until it has read every entry. */
async function watch(script: MembershipStatus[]): Promise<InvariantMonitor> {
  let reads = 0;
  const monitor = new InvariantMonitor({ status: async () => script[Math.min(reads++, script.length - 1)] });
  monitor.start();
  // Bounded: at most 50 looks of 50 ms.
  for (let i = 0; i < 50 && reads < script.length; i++) await new Promise((r) => setTimeout(r, 50));
  await monitor.stop();
  return monitor;
}

const healthy = membership([undefined, undefined, undefined, undefined, undefined]);
const allTimedOut = membership([TIMEOUT, TIMEOUT, TIMEOUT, TIMEOUT, TIMEOUT]);

describe('the invariant monitor', () => {
  it('takes a reading again when every failing member only timed out, and counts the second one', async () => {
    const monitor = await watch([healthy, allTimedOut, healthy, healthy]);
    expect(monitor.violations).toEqual([]);
    expect(monitor.stalledReadings).toBe(1);
  });

  it('counts two members refusing connections at once, without a second look', async () => {
    const monitor = await watch([healthy, membership([undefined, REFUSED, REFUSED, undefined, undefined]), healthy]);
    expect(monitor.violations.some((v) => v.startsWith('2 voting members down'))).toBe(true);
    expect(monitor.stalledReadings).toBe(0);
  });

  it('counts a stall still there on the second look as lost quorum', async () => {
    const monitor = await watch([healthy, allTimedOut, allTimedOut, healthy]);
    expect(monitor.violations.some((v) => v.startsWith('quorum lost'))).toBe(true);
  });

  it('counts one timed-out member as one down, which is allowed', async () => {
    const monitor = await watch([healthy, membership([undefined, TIMEOUT, undefined, undefined, undefined]), healthy]);
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBe(1);
    expect(monitor.stalledReadings).toBe(0);
  });
});
