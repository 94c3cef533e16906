/**
 * The defragmentation and NOSPACE-recovery decision, one step per reconcile,
 * from the membership alone: every gate that holds it back, the order it
 * takes members in, and the cases in which it must do nothing.
 */
import { decideDefragmentationStep, openWindow, type DefragmentationInput } from '../../engines/etcd/defragmentation.js';
import type { MemberAlarm, MemberStatus, MembershipStatus } from '../../engines/membership.js';

const MIB = 2 ** 20;
const NOW = Date.parse('2026-11-26T12:00:00Z');

/** A member of `size` MiB with `inUse` MiB in use; kv-0 leads. */
function member(i: number, size = 200, inUse = 50, over: Partial<MemberStatus> = {}): MemberStatus {
  return {
    id: `${1000 + i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: true, leader: i === 0, alarms: [],
    dbSizeBytes: size * MIB, dbSizeInUseBytes: inUse * MIB, revision: 5000, ...over,
  };
}

function membership(members: MemberStatus[], alarms: MemberAlarm[] = []): MembershipStatus {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, leaderId: members.find((m) => m.leader)?.id, alarms };
}

function step(members: MemberStatus[], over: Partial<DefragmentationInput> = {}) {
  return decideDefragmentationStep({
    membership: membership(members), quotaBytes: 1024 * MIB, minFreePercent: 50, minSizeBytes: 64 * MIB,
    intervalMs: 3_600_000, nospaceMarginPercent: 10, lastDefragmented: {}, now: NOW, ...over,
  });
}

const three = () => [member(0), member(1), member(2)];

describe('defragmentation, one member at a time', () => {
  it('defragments a follower first, the lowest ordinal, when members are mostly free pages', () => {
    const s = step(three());
    expect(s.action).toEqual({ type: 'defragment', pod: 'kv-1', id: '1001' });
    expect(s.reason).toBe('Defragmenting');
    expect(s.message).toMatch(/defragmenting kv-1 \(200 MiB, 75% free\).*2 more after it/);
  });

  it('moves leadership off the leader before defragmenting it, once the followers are done', () => {
    const s = step([member(0), member(1, 60, 50), member(2, 60, 50)]);
    expect(s.action).toEqual({ type: 'moveLeader', fromPod: 'kv-0', toId: '1001', toPod: 'kv-1' });
    // The next look finds the former leader a follower, and defragments it.
    const next = step([member(0, 200, 50, { leader: false }), member(1, 60, 50, { leader: true }), member(2, 60, 50)]);
    expect(next.action).toEqual({ type: 'defragment', pod: 'kv-0', id: '1000' });
  });

  it('hands leadership to the follower furthest along the log, which etcd lets take it soonest', () => {
    const s = step([member(0, 200, 50, { raftIndex: 900 }), member(1, 60, 50, { raftIndex: 880 }), member(2, 60, 50, { raftIndex: 899 })]);
    expect(s.action).toEqual({ type: 'moveLeader', fromPod: 'kv-0', toId: '1002', toPod: 'kv-2' });
  });

  it('defragments a single member in place: there is nobody to hand leadership to', () => {
    expect(step([member(0)]).action).toEqual({ type: 'defragment', pod: 'kv-0', id: '1000' });
  });

  it('does NOT defragment members with less free space than minFreePercent', () => {
    const s = step([member(0, 200, 150), member(1, 200, 150), member(2, 200, 150)]);
    expect(s.action).toBeUndefined();
    expect(s.reason).toBe('Idle');
    expect(step([member(0, 200, 150), member(1, 200, 150), member(2, 200, 150)], { minFreePercent: 20 }).action).toMatchObject({ type: 'defragment', pod: 'kv-1' });
  });

  it('looks again within seconds at a cluster near its quota, so that NOSPACE is seen soon after it is raised', () => {
    const calm = step([member(0, 200, 150), member(1, 200, 150), member(2, 200, 150)]);
    expect(calm.requeueAfterMs).toBeUndefined();
    const nearlyFull = step([member(0, 800, 700), member(1, 200, 150), member(2, 200, 150)]);
    expect(nearlyFull).toMatchObject({ reason: 'Idle', requeueAfterMs: 5_000 });
  });

  it('does NOT defragment a database below the size floor, however free', () => {
    const s = step([member(0, 40, 1), member(1, 40, 1), member(2, 40, 1)]);
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/no member needs defragmenting \(at least 50% free of at least 64 MiB\)/);
  });

  it('does NOT defragment a member twice within the interval, and does once it passed', () => {
    const recently = { 'kv-0': NOW - 60_000, 'kv-1': NOW - 60_000, 'kv-2': NOW - 60_000 };
    const s = step(three(), { lastDefragmented: recently });
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/defragmented in the last 60 min already/);
    expect(s.requeueAfterMs).toBe(3_600_000 - 60_000);
    expect(step(three(), { lastDefragmented: { ...recently, 'kv-2': NOW - 3_700_000 } }).action).toMatchObject({ type: 'defragment', pod: 'kv-2' });
  });

  it('holds while a voting member is unhealthy, naming it', () => {
    const s = step([member(0), member(1), member(2, 200, 50, { healthy: false, problem: 'connection refused' })]);
    expect(s.action).toBeUndefined();
    expect(s.reason).toBe('Held');
    expect(s.message).toBe('waiting for every member to be healthy; unhealthy: kv-2 (connection refused)');
  });

  it('holds while a learner exists', () => {
    const s = step([...three(), member(3, 200, 50, { learner: true })]);
    expect(s).toMatchObject({ reason: 'Held', message: 'waiting for the learner kv-3 to be promoted' });
    expect(s.action).toBeUndefined();
  });

  it('holds while a scaling, upgrade or storage step is under way', () => {
    const s = step(three(), { otherStep: 'the upgrade (restarting kv-2)' });
    expect(s).toMatchObject({ reason: 'Held', message: 'waiting for the upgrade (restarting kv-2) to finish' });
    expect(s.action).toBeUndefined();
  });

  it('holds without a leader', () => {
    const s = step([member(0, 200, 50, { leader: false }), member(1), member(2)]);
    expect(s).toMatchObject({ reason: 'Held', message: 'waiting for a leader' });
  });

  it('holds outside the maintenance window and says when the next opens; inside, defragments once per window', () => {
    const window = { schedule: '0 3 * * *', durationMinutes: 60 };
    const outside = step(three(), { window });
    expect(outside.action).toBeUndefined();
    expect(outside.message).toMatch(/waiting for the maintenance window \(0 3 \* \* \*, next at 2026-11-27T03:00:00.000Z\)/);
    const inside = Date.parse('2026-11-27T03:20:00Z');
    expect(step(three(), { window, now: inside }).action).toMatchObject({ type: 'defragment', pod: 'kv-1' });
    const doneThisWindow = { 'kv-0': inside - 60_000, 'kv-1': inside - 60_000, 'kv-2': inside - 60_000 };
    expect(step(three(), { window, now: inside, lastDefragmented: doneThisWindow }).action).toBeUndefined();
    // Defragmented in yesterday's window: due again today, whatever the interval.
    const yesterday = { 'kv-0': inside - 86_400_000, 'kv-1': inside - 86_400_000, 'kv-2': inside - 86_400_000 };
    expect(step(three(), { window, now: inside, lastDefragmented: yesterday }).action).toMatchObject({ type: 'defragment' });
  });

  it('reads a window that opened before now and is still open, and one that closed', () => {
    expect(openWindow({ schedule: '0 3 * * *', durationMinutes: 60 }, Date.parse('2026-11-27T03:59:00Z'))).toEqual({ openedAt: Date.parse('2026-11-27T03:00:00Z') });
    expect(openWindow({ schedule: '0 3 * * *', durationMinutes: 60 }, Date.parse('2026-11-27T04:00:00Z'))).toEqual({ nextAt: Date.parse('2026-11-28T03:00:00Z') });
    expect(openWindow({ schedule: 'not cron', durationMinutes: 60 }, NOW).problem).toMatch(/window.schedule "not cron" does not parse/);
  });
});

describe('NOSPACE recovery, with no human step', () => {
  const nospace: MemberAlarm[] = [{ memberId: '1000', alarm: 'NOSPACE' }];
  const full = () => [member(0, 1024, 300), member(1, 1024, 300), member(2, 1024, 300)];
  const recover = (members: MemberStatus[], over: Partial<DefragmentationInput> = {}) => step([], { membership: membership(members, nospace), ...over });

  it('compacts at the current revision first', () => {
    const s = recover(full());
    expect(s).toMatchObject({ reason: 'Recovering', action: { type: 'compact', revision: 5000 } });
  });

  it('then defragments every member, followers first, ignoring the window, the floor and the interval', () => {
    const compacted = { revision: 5000, at: NOW - 10_000 };
    const s = recover(full(), { compacted, window: { schedule: '0 3 * * *', durationMinutes: 1 }, lastDefragmented: { 'kv-1': NOW - 60_000 }, minSizeBytes: 10 * 1024 * MIB });
    expect(s).toMatchObject({ reason: 'Recovering', action: { type: 'defragment', pod: 'kv-1' } });
    // A follower below the target too: it holds the same keys, and would be the next to raise NOSPACE (a CI run left
    // one at 13 of 16 MiB undefragmented).
    const belowTarget = [member(0, 1024, 300), member(1, 300, 300), member(2, 900, 300)];
    expect(recover(belowTarget, { compacted }).action).toMatchObject({ type: 'defragment', pod: 'kv-1' });
    const defragmented = { 'kv-1': NOW - 5_000, 'kv-2': NOW - 4_000 };
    const leaderLeft = recover([member(0, 1024, 300), member(1, 300, 300), member(2, 300, 300)], { compacted, lastDefragmented: defragmented });
    expect(leaderLeft.action).toEqual({ type: 'moveLeader', fromPod: 'kv-0', toId: '1001', toPod: 'kv-1' });
  });

  it('counts a member defragmented in the second of the compaction as defragmented since (status keeps whole seconds)', () => {
    const compacted = { revision: 5000, at: NOW + 400 };
    const s = recover([member(0, 300, 300, { leader: false }), member(1, 300, 300, { leader: true })], { compacted, lastDefragmented: { 'kv-0': NOW, 'kv-1': NOW } });
    expect(s.action).toEqual({ type: 'disarm', alarms: nospace });
  });

  it('disarms once every member was defragmented and is below the quota less the margin, and not before', () => {
    const compacted = { revision: 5000, at: NOW - 10_000 };
    const all = { 'kv-0': NOW - 3_000, 'kv-1': NOW - 5_000, 'kv-2': NOW - 4_000 };
    const below = [member(0, 900, 300), member(1, 300, 300), member(2, 300, 300)];
    expect(recover(below, { compacted, lastDefragmented: all }).action).toEqual({ type: 'disarm', alarms: nospace });
    expect(recover(below, { compacted, lastDefragmented: { 'kv-1': NOW - 5_000 } }).action).toMatchObject({ type: 'defragment', pod: 'kv-2' });
    const atMargin = [member(0, 1000, 300), member(1, 300, 300), member(2, 300, 300)];
    expect(recover(atMargin, { compacted, lastDefragmented: { 'kv-1': NOW - 5_000, 'kv-2': NOW - 4_000 } }).action).toMatchObject({ type: 'moveLeader' });
  });

  it('without a compaction to count from (revision unknown), defragments the members over the target only, so that it ends', () => {
    const unknownRevision = (m: MemberStatus) => ({ ...m, revision: undefined });
    const members = [member(0, 300, 300), member(1, 1024, 300), member(2, 300, 300)].map(unknownRevision);
    expect(recover(members).action).toMatchObject({ type: 'defragment', pod: 'kv-1' });
    const done = [member(0, 300, 300), member(1, 300, 300), member(2, 300, 300)].map(unknownRevision);
    expect(recover(done).action).toEqual({ type: 'disarm', alarms: nospace });
  });

  it('says the quota is too small, instead of defragmenting in a loop, when a member defragmented since the compaction is still over the target', () => {
    const compacted = { revision: 5000, at: NOW - 10_000 };
    // Its size in use says little before: pages a compaction freed stay pending until the next write.
    const pending = [member(0, 1024, 1000), member(1, 1024, 1000), member(2, 1024, 1000)];
    expect(recover(pending, { compacted }).action).toMatchObject({ type: 'defragment', pod: 'kv-1' });
    const s = recover([member(0, 1024, 1000), member(1, 1000, 1000), member(2, 1000, 1000)], { compacted, lastDefragmented: { 'kv-1': NOW - 5_000, 'kv-2': NOW - 4_000 } });
    expect(s.action).toBeUndefined();
    expect(s.message).toMatch(/kv-1: 1000 MiB, kv-2: 1000 MiB/);
    expect(s.reason).toBe('QuotaTooSmall');
    expect(s.message).toMatch(/raise spec.maintenance.quota or spec.storage.size/);
  });

  it('holds the recovery too while a member is unhealthy', () => {
    const s = recover([member(0, 1024, 300), member(1, 1024, 300, { healthy: false, problem: 'timeout' }), member(2, 1024, 300)]);
    expect(s.action).toBeUndefined();
    expect(s.reason).toBe('Held');
    expect(s.requeueAfterMs).toBe(2_000);
  });
});
