/**
 * The upgrade decision, one pod restart per reconcile, from the pods, the
 * StatefulSet's revisions and the membership alone.
 */
import { decideUpgradeStep, rollChange, type MemberPod, type UpgradeInput } from '../../engines/etcd/upgrade.js';
import type { MemberStatus, MembershipStatus } from '../../engines/membership.js';

const OLD = 'registry.k8s.io/etcd:3.6.8-0';
const NEW = 'registry.k8s.io/etcd:3.6.9-0';
const ARGS = ['--name=$(POD_NAME)', '--quota-backend-bytes=5368709120'];

function pod(i: number, revision: 'old' | 'new', over: Partial<MemberPod> = {}): MemberPod {
  return { name: `kv-${i}`, uid: `uid-${i}`, resourceVersion: `${100 + i}`, revision, image: revision === 'old' ? OLD : NEW, args: ARGS, deleting: false, ...over };
}
function member(i: number, over: Partial<MemberStatus> = {}): MemberStatus {
  return { id: `${1000 + i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: true, leader: false, alarms: [], ...over };
}
function membership(members: MemberStatus[]): MembershipStatus {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, leaderId: members.find((m) => m.leader)?.id, alarms: [] };
}
function step(pods: MemberPod[], members: MemberStatus[], over: Partial<UpgradeInput> = {}) {
  return decideUpgradeStep({ targetImage: NEW, targetArgs: ARGS, replicas: pods.length, statefulSetCurrent: true, updateRevision: 'new', pods, membership: membership(members), ...over });
}

describe('quorum-aware upgrades, one member at a time', () => {
  it('restarts the highest outdated follower first, reporting the lowest running version', () => {
    const s = step([pod(0, 'old'), pod(1, 'old'), pod(2, 'old')], [member(0, { leader: true }), member(1), member(2)]);
    expect(s.action).toMatchObject({ type: 'deletePod', pod: { name: 'kv-2', uid: 'uid-2', resourceVersion: '102' } });
    expect(s).toMatchObject({ upgrading: true, currentVersion: OLD, targetVersion: NEW, updatedMembers: 0 });
  });

  it('moves leadership off the leader before restarting it last', () => {
    const s = step([pod(0, 'old'), pod(1, 'new'), pod(2, 'new')], [member(0, { leader: true }), member(1), member(2)]);
    expect(s.action).toEqual({ type: 'moveLeader', fromPod: 'kv-0', toId: '1001', toPod: 'kv-1' });
    const after = step([pod(0, 'old'), pod(1, 'new'), pod(2, 'new')], [member(0), member(1, { leader: true }), member(2)]);
    expect(after.action).toMatchObject({ type: 'deletePod', pod: { name: 'kv-0' } });
  });

  it('waits while a restarted member knows a leader but is still applying what it missed (issue 40)', () => {
    const s = step([pod(0, 'old'), pod(1, 'old'), pod(2, 'new')], [member(0, { leader: true, raftIndex: 50_000 }), member(1, { raftAppliedIndex: 49_990 }), member(2, { raftAppliedIndex: 3 })]);
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/catching up: kv-2 \(applied 3 of the leader's 50000 entries\)/);
  });

  it('waits while a restarted pod is being recreated or its member is not healthy yet, naming it', () => {
    const gone = step([pod(0, 'old'), pod(1, 'old')], [member(0, { leader: true }), member(1), member(2, { healthy: false })], { replicas: 3 });
    expect(gone.action).toBeUndefined();
    expect(gone.message).toMatch(/waiting for a deleted pod to be recreated/);
    const starting = step([pod(0, 'old'), pod(1, 'old'), pod(2, 'new')], [member(0, { leader: true }), member(1), member(2, { healthy: false, problem: 'connection refused' })]);
    expect(starting.action).toBeUndefined();
    expect(starting.message).toMatch(/unhealthy: kv-2 \(connection refused\)/);
  });

  it('stops at the one member a bad image broke; reverting the spec replaces that member first', () => {
    const broken = [member(0, { leader: true }), member(1), member(2, { healthy: false, problem: 'no leader' })];
    const stuck = step([pod(0, 'old'), pod(1, 'old'), pod(2, 'new', { image: 'registry.k8s.io/etcd:3.6.10-bad' })], broken, { targetImage: 'registry.k8s.io/etcd:3.6.10-bad' });
    expect(stuck.action).toBeUndefined();
    expect(stuck.upgrading).toBe(true);
    // The spec is reverted: the old template is the update revision again, and the broken pod is the outdated one.
    const reverted = decideUpgradeStep({
      targetImage: OLD, targetArgs: ARGS, replicas: 3, statefulSetCurrent: true, updateRevision: 'old',
      pods: [pod(0, 'old'), pod(1, 'old'), pod(2, 'new', { image: 'registry.k8s.io/etcd:3.6.10-bad' })], membership: membership(broken),
    });
    expect(reverted.action).toMatchObject({ type: 'deletePod', pod: { name: 'kv-2' }, reason: 'outdated and unhealthy' });
  });

  it('does nothing before the StatefulSet controller has seen the new template, and nothing without a quorum', () => {
    const stale = step([pod(0, 'old')], [member(0, { leader: true })], { statefulSetCurrent: false, updateRevision: 'old' });
    expect(stale.action).toBeUndefined();
    expect(stale.upgrading).toBe(true); // its revisions are the last template's: nothing is up to date yet
    const noQuorum = step([pod(0, 'old'), pod(1, 'old'), pod(2, 'old')], [member(0, { leader: true }), member(1, { healthy: false }), member(2, { healthy: false })]);
    expect(noQuorum.action).toBeUndefined();
    expect(noQuorum.message).toMatch(/no quorum: 1 of 3/);
  });

  it('restarts a single member in place, saying it is unavailable meanwhile', () => {
    const s = step([pod(0, 'old')], [member(0, { leader: true })]);
    expect(s.action).toMatchObject({ type: 'deletePod', pod: { name: 'kv-0' } });
    expect(s.message).toMatch(/single member is unavailable while it restarts/);
  });

  it('is done when every pod runs the update revision', () => {
    const s = step([pod(0, 'new'), pod(1, 'new'), pod(2, 'new')], [member(0, { leader: true }), member(1), member(2)]);
    expect(s).toMatchObject({ upgrading: false, currentVersion: NEW, updatedMembers: 3 });
    expect(s.action).toBeUndefined();
  });
});

describe('what a roll changes, in its messages', () => {
  const RAISED = ['--name=$(POD_NAME)', '--quota-backend-bytes=8589934592'];

  it('names the image of an upgrade, and the first restart says it', () => {
    expect(rollChange({ image: OLD, args: ARGS }, { image: NEW, args: ARGS })).toBe(NEW);
    const s = step([pod(0, 'old'), pod(1, 'old'), pod(2, 'old')], [member(0, { leader: true }), member(1), member(2)]);
    expect(s.message).toBe(`restarting kv-2 with ${NEW} (0 of 3 updated)`);
  });

  it('names the arguments of an arguments-only roll (a quota raised after the volumes grew), not the image the members already run', () => {
    expect(rollChange({ image: OLD, args: ARGS }, { image: OLD, args: RAISED })).toBe('new arguments (--quota-backend-bytes=8589934592)');
    const s = step([pod(0, 'old', { image: OLD }), pod(1, 'old', { image: OLD }), pod(2, 'old', { image: OLD })], [member(0, { leader: true }), member(1), member(2)], { targetImage: OLD, targetArgs: RAISED });
    expect(s.message).toBe('restarting kv-2 with new arguments (--quota-backend-bytes=8589934592) (0 of 3 updated)');
    expect(s.action).toMatchObject({ type: 'deletePod', change: 'new arguments (--quota-backend-bytes=8589934592)' });
    expect(s.message).not.toContain(OLD);
  });

  it('names both when an upgrade changes a flag\'s spelling too, an argument dropped alone, and another template change in words', () => {
    const on35 = ['--name=$(POD_NAME)', '--experimental-corrupt-check-time=14400s'];
    const on36 = ['--name=$(POD_NAME)', '--corrupt-check-time=14400s'];
    expect(rollChange({ image: 'registry.k8s.io/etcd:3.5.21-0', args: on35 }, { image: NEW, args: on36 })).toBe(`${NEW} and new arguments (--corrupt-check-time=14400s)`);
    expect(rollChange({ image: OLD, args: on36 }, { image: OLD, args: ['--name=$(POD_NAME)'] })).toBe('arguments without --corrupt-check-time=14400s');
    expect(rollChange({ image: OLD, args: ARGS }, { image: OLD, args: ARGS })).toBe('a new pod template (neither its image nor its arguments changed)');
  });
});
