/**
 * The scaling decision, one step per reconcile, from the live membership and
 * the StatefulSet's replicas alone: each case is a state the controller can
 * find, including the half-done steps a crash leaves behind.
 */
import { decideScalingStep, type ScalingInput } from '../../engines/etcd/scaling.js';
import type { MemberStatus, MembershipStatus } from '../../engines/membership.js';

const pod = (i: number) => `kv-${i}`;

function member(i: number, over: Partial<MemberStatus> = {}): MemberStatus {
  return { id: `${1000 + i}`, name: pod(i), peerUrls: [`http://kv-${i}.kv-peers:2380`], learner: false, healthy: true, leader: i === 0, alarms: [], ...over };
}

function membership(members: MemberStatus[]): MembershipStatus {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, leaderId: members.find((m) => m.leader)?.id, alarms: [] };
}

function step(over: Partial<ScalingInput> & Pick<ScalingInput, 'size'>) {
  return decideScalingStep({ pod, membership: { unreachable: 'not asked' }, ...over });
}

describe('membership-safe scaling, one step at a time', () => {
  it('bootstraps a new cluster of size members when no StatefulSet exists', () => {
    expect(step({ size: 3 })).toMatchObject({ plan: { replicas: 3, state: 'new' }, phase: 'Stable' });
  });

  it('is stable when the members, the pods and the spec agree', () => {
    const s = step({ size: 3, replicas: 3, membership: membership([member(0), member(1), member(2)]) });
    expect(s).toMatchObject({ plan: { replicas: 3, state: 'existing' }, phase: 'Stable' });
    expect(s.action).toBeUndefined();
    // Looked at again later: a member can fail without any object the controller watches changing.
    expect(s.requeueAfterMs).toBe(30_000);
  });

  it('looks again within seconds at a settled cluster with an unhealthy member, changing nothing', () => {
    const s = step({ size: 3, replicas: 3, membership: membership([member(0), member(1, { healthy: false }), member(2)]) });
    expect(s).toMatchObject({ plan: { replicas: 3, state: 'existing' }, phase: 'Stable', requeueAfterMs: 5_000 });
    expect(s.action).toBeUndefined();
  });

  it('scales out by adding the next ordinal as a learner, and raises replicas only if that succeeded', () => {
    const s = step({ size: 5, replicas: 3, membership: membership([member(0), member(1), member(2)]) });
    expect(s.action).toEqual({ type: 'addLearner', pod: 'kv-3' });
    expect(s.plan).toEqual({ replicas: 4, state: 'existing' });
    expect(s.planIfActionFails).toEqual({ replicas: 3, state: 'existing' });
  });

  it('after a crash between adding the learner and raising replicas, raises them and adds nothing', () => {
    const s = step({ size: 5, replicas: 3, membership: membership([member(0), member(1), member(2), { ...member(3), name: '', learner: true, healthy: false, leader: false }]) });
    expect(s.action).toBeUndefined();
    expect(s.plan).toEqual({ replicas: 4, state: 'existing' });
    expect(s.phase).toBe('ScalingOut');
  });

  it('waits for a learner that is starting, then promotes it, before adding the next', () => {
    const starting = step({ size: 5, replicas: 4, membership: membership([member(0), member(1), member(2), member(3, { learner: true, healthy: false, leader: false })]) });
    expect(starting.action).toBeUndefined();
    expect(starting.message).toMatch(/kv-3 was added as a learner/);
    const running = step({ size: 5, replicas: 4, membership: membership([member(0), member(1), member(2), member(3, { learner: true, leader: false })]) });
    expect(running.action).toEqual({ type: 'promote', id: '1003', pod: 'kv-3' });
    expect(running.plan.replicas).toBe(4);
  });

  it('scales in by moving leadership off the highest ordinal first, then removing it, then lowering replicas', () => {
    const five = [member(0, { leader: false }), member(1), member(2), member(3), member(4, { leader: true })];
    const leaderOnTop = step({ size: 3, replicas: 5, membership: membership(five) });
    expect(leaderOnTop.action).toEqual({ type: 'moveLeader', fromPod: 'kv-4', toId: '1000', toPod: 'kv-0' });
    expect(leaderOnTop.plan.replicas).toBe(5);

    const leaderBelow = [member(0), ...[1, 2, 3, 4].map((i) => member(i, { leader: false }))];
    const follower = step({ size: 3, replicas: 5, membership: membership(leaderBelow) });
    expect(follower.action).toEqual({ type: 'remove', id: '1004', pod: 'kv-4' });
    expect(follower.plan).toEqual({ replicas: 4, state: 'existing' });
    expect(follower.planIfActionFails).toEqual({ replicas: 5, state: 'existing' });
  });

  it('after a crash between removing a member and lowering replicas, lowers them before removing another', () => {
    const s = step({ size: 3, replicas: 5, membership: membership([member(0), member(1), member(2), member(3)]) });
    expect(s.action).toBeUndefined();
    expect(s.plan).toEqual({ replicas: 4, state: 'existing' });
  });

  it('changes nothing while a voting member is unhealthy, naming it', () => {
    const s = step({ size: 5, replicas: 3, membership: membership([member(0), member(1), member(2, { healthy: false, problem: 'connection refused' })]) });
    expect(s.action).toBeUndefined();
    expect(s.plan.replicas).toBe(3);
    expect(s.phase).toBe('Waiting');
    expect(s.message).toMatch(/kv-2 \(connection refused\)/);
  });

  it('changes nothing without a quorum, and names the members it cannot reach', () => {
    const s = step({ size: 5, replicas: 3, membership: membership([member(0), member(1, { healthy: false, problem: 'timeout' }), member(2, { healthy: false, problem: 'refused' })]) });
    expect(s).toMatchObject({ phase: 'QuorumLost', plan: { replicas: 3 } });
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/1 of 3 voting members healthy.*kv-1 \(timeout\), kv-2 \(refused\)/);
  });

  it('keeps the membership as last rendered while no member answers, whatever the spec says', () => {
    const s = step({ size: 5, replicas: 3, recorded: { replicas: 3, state: 'existing' }, membership: { unreachable: 'ECONNREFUSED' } });
    expect(s).toMatchObject({ phase: 'Unreachable', plan: { replicas: 3, state: 'existing' } });
    expect(s.message).toMatch(/change to 5 members waits/);
  });

  it('restores a member pod that someone scaled away before any other step', () => {
    const s = step({ size: 5, replicas: 2, membership: membership([member(0), member(1), member(2)]) });
    expect(s.action).toBeUndefined();
    expect(s.plan.replicas).toBe(3);
  });

  it('goes from 2 to 1 and from 1 to 2 like any other size', () => {
    expect(step({ size: 1, replicas: 2, membership: membership([member(0), member(1, { leader: false })]) }).action).toEqual({ type: 'remove', id: '1001', pod: 'kv-1' });
    expect(step({ size: 2, replicas: 1, membership: membership([member(0)]) }).action).toEqual({ type: 'addLearner', pod: 'kv-1' });
  });

  it('makes the next membership change only once the StatefulSet runs exactly the pods it should', () => {
    const s = step({ size: 3, replicas: 4, podsSettled: false, membership: membership([member(0), member(1, { leader: false }), member(2, { leader: false }), member(3, { leader: false })]) });
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/waits for the StatefulSet to run exactly 4 pods/);
  });

  it('keeps an existing cluster\'s membership while its StatefulSet is being created again (storage growth)', () => {
    const s = step({ size: 5, recorded: { replicas: 3, state: 'existing' } });
    expect(s).toMatchObject({ plan: { replicas: 3, state: 'existing' }, phase: 'Stable' });
    expect(s.action).toBeUndefined();
  });
});

describe('never lowers replicas below a voting member\'s ordinal (issue 40, defect 2)', () => {
  // Voters kv-0, kv-3 and kv-4: kv-1 and kv-2 removed by hand (etcdctl member remove), or left out by a recovery from kv-4.
  const gapped = (over: Record<number, Partial<MemberStatus>> = {}) => membership([0, 3, 4].map((i) => member(i, over[i])));

  it('keeps the pods of voters at high ordinals when the membership has gaps, and says why nothing changes', () => {
    const s = step({ size: 3, replicas: 5, membership: gapped() });
    // Before the fix: replicas 3, which deletes kv-3 and kv-4 with their claims: the quorum and two members' data.
    expect(s.plan.replicas).toBe(5);
    expect(s.planIfActionFails.replicas).toBe(5);
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/kv-1, kv-2/);
  });

  it('holds the floor while the quorum is lost too', () => {
    const s = step({ size: 3, replicas: 5, membership: gapped({ 3: { healthy: false }, 4: { healthy: false } }) });
    expect(s.phase).toBe('QuorumLost');
    expect(s.plan.replicas).toBe(5);
  });

  it('adds no learner at an ordinal a voter already holds', () => {
    const s = step({ size: 5, replicas: 5, membership: gapped() });
    expect(s.action).toBeUndefined();
    expect(s.plan.replicas).toBe(5);
  });
});

describe('a member that knows a leader but has not applied what it committed (issue 40)', () => {
  // kv-2 restarted and replays its log, or takes a snapshot: healthy by its status, thousands of entries behind.
  const replaying = () => membership([
    member(0, { raftIndex: 9_000, raftAppliedIndex: 9_000 }), member(1, { raftIndex: 9_000, raftAppliedIndex: 8_998 }), member(2, { raftIndex: 9_000, raftAppliedIndex: 1_200 }),
  ]);

  it('holds a scale-in until it has caught up: removing another member meanwhile could cost the quorum', () => {
    const s = step({ size: 1, replicas: 3, membership: replaying() });
    expect(s.action).toBeUndefined();
    expect(s).toMatchObject({ phase: 'Waiting', message: expect.stringMatching(/catching up: kv-2 \(applied 1200 of the leader's 9000 entries\)/) });
  });

  it('goes on once it trails by no more than a follower under load does', () => {
    const caughtUp = membership([member(0, { raftIndex: 9_000, raftAppliedIndex: 9_000 }), member(1, { raftIndex: 9_000 }), member(2, { raftIndex: 9_000, raftAppliedIndex: 8_500 })]);
    expect(step({ size: 5, replicas: 3, membership: caughtUp }).action).toEqual({ type: 'addLearner', pod: 'kv-3' });
  });

  describe('members the controller did not add (the pods\' peer URLs given)', () => {
    const peerUrl = (p: string) => `https://${p}.kv-peers:2380`;
    // Someone who reached a client port while it took plain HTTP: `member add --learner`, their own process, any name.
    const intruder = (over: Partial<MemberStatus> = {}) => member(7, { id: '6666', name: 'kv-7', peerUrls: ['http://10.9.9.9:2380'], learner: true, ...over });

    it('removes a learner that advertises no pod of the cluster, never promotes it, and keeps the StatefulSet at its size (kv-7 is no ordinal to make room for)', () => {
      const s = step({ size: 3, replicas: 3, peerUrl, membership: membership([member(0), member(1), member(2), intruder()]) });
      expect(s.action).toEqual({ type: 'remove', id: '6666', pod: 'kv-7' });
      expect(s.plan).toEqual({ replicas: 3, state: 'existing' });
      expect(s.message).toMatch(/^removing learner kv-7 \(member 6666, peer URLs http:\/\/10\.9\.9\.9:2380\): it advertises no pod of this cluster/);
      // Without the pods' peer URLs (the old decision) it was promoted, and the StatefulSet raised to 8 for its name.
      const blind = step({ size: 3, replicas: 3, membership: membership([member(0), member(1), member(2), intruder()]) });
      expect(blind.action).toEqual({ type: 'promote', id: '6666', pod: 'kv-7' });
    });

    it('takes a learner advertising a pod\'s address under another pod\'s name for a stranger too; its own learner (scheme aside) is promoted', () => {
      const renamed = member(3, { id: '6667', name: 'kv-5', learner: true });
      expect(step({ size: 4, replicas: 4, peerUrl, membership: membership([member(0), member(1), member(2), renamed]) }).action).toEqual({ type: 'remove', id: '6667', pod: 'kv-5' });
      const ours = member(3, { learner: true });
      expect(step({ size: 4, replicas: 4, peerUrl, membership: membership([member(0), member(1), member(2), ours]) }).action).toEqual({ type: 'promote', id: '1003', pod: 'kv-3' });
    });

    it('holds everything, changing nothing, while a voting member advertises no pod of the cluster: a human decides', () => {
      const s = step({ size: 5, replicas: 3, peerUrl, membership: membership([member(0), member(1), member(2), intruder({ learner: false })]) });
      expect(s.action).toBeUndefined();
      expect(s).toMatchObject({ phase: 'Waiting', plan: { replicas: 3, state: 'existing' } });
      expect(s.message).toMatch(/voting member kv-7 .* advertises no pod of this cluster: the controller did not add it; nothing is added, removed or promoted/);
    });
  });
});
