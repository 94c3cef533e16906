/**
 * What status says about each member's database, the quota, alarms and
 * maintenance, and that a quiet or merely busy cluster's status does not
 * change from one look at its members to the next (no status write).
 */
import { desiredStatus, statusChanged, steadySize, type ObservedState } from '../../reconciler/core/status.js';
import type { MemberStatus } from '../../engines/membership.js';

const MIB = 2 ** 20;
const NOW = new Date('2026-11-26T10:00:00Z');
const LATER = new Date('2026-11-26T10:00:30Z');

function member(i: number, size: number, inUse: number, over: Partial<MemberStatus> = {}): MemberStatus {
  return { id: `${1000 + i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: true, leader: i === 0, alarms: [], dbSizeBytes: size, dbSizeInUseBytes: inUse, ...over };
}

function observed(members: MemberStatus[], maintenance: Partial<NonNullable<ObservedState['maintenance']>> = {}): ObservedState {
  return {
    generation: 1, size: 3,
    statefulSet: { metadata: { generation: 1 }, spec: { replicas: 3 }, status: { readyReplicas: 3, updatedReplicas: 3, observedGeneration: 1 } },
    generatedObjects: [],
    membership: { phase: 'Stable', message: '3 voting members', members },
    maintenance: { reason: 'Idle', message: 'no member needs defragmenting', quotaBytes: 1024 * MIB, alarms: [], lastDefragmented: {}, ...maintenance },
  };
}

const condition = (status: ReturnType<typeof desiredStatus>, type: string) => status.conditions!.find((c) => c.type === type);

describe('maintenance in status', () => {
  it('reports each member\'s db size and size in use in whole MiB, the quota, and the fullest member\'s percentage', () => {
    const status = desiredStatus(observed([member(0, 300.4 * MIB, 100.2 * MIB), member(1, 512 * MIB, 100 * MIB), member(2, 10 * MIB, 9 * MIB)], { lastDefragmented: { 'kv-2': '2026-11-26T09:00:00Z' } }), undefined, NOW);
    expect(status.members).toEqual([
      { name: 'kv-0', role: 'leader', healthy: true, dbSizeBytes: 300 * MIB, dbSizeInUseBytes: 100 * MIB },
      { name: 'kv-1', role: 'follower', healthy: true, dbSizeBytes: 512 * MIB, dbSizeInUseBytes: 100 * MIB },
      { name: 'kv-2', role: 'follower', healthy: true, dbSizeBytes: 10 * MIB, dbSizeInUseBytes: 9 * MIB, lastDefragmentationTime: '2026-11-26T09:00:00Z' },
    ]);
    expect(status.quotaBytes).toBe(1024 * MIB);
    expect(status.databaseFullPercent).toBe(50);
    expect(condition(status, 'Maintenance')).toMatchObject({ status: 'False', reason: 'Idle' });
    expect(condition(status, 'Alarm')).toMatchObject({ status: 'False', reason: 'NoAlarm' });
  });

  it('does not change while db sizes wobble within a MiB, so a steady cluster needs no status write', () => {
    const first = desiredStatus(observed([member(0, 300 * MIB, 100 * MIB), member(1, 300 * MIB, 100 * MIB), member(2, 300 * MIB, 100 * MIB)]), undefined, NOW);
    // Pages come and go with each write and compaction: a few KiB, or across a MiB boundary and back.
    const wobbled = desiredStatus(observed([member(0, 300.6 * MIB, 100.5 * MIB), member(1, 299.4 * MIB, 101 * MIB), member(2, 300 * MIB + 4096, 100 * MIB - 4096)]), first, LATER);
    expect(statusChanged(first, wobbled)).toBe(false);
    // Real growth is reported.
    const grown = desiredStatus(observed([member(0, 310 * MIB, 100 * MIB), member(1, 300 * MIB, 100 * MIB), member(2, 300 * MIB, 100 * MIB)]), first, LATER);
    expect(statusChanged(first, grown)).toBe(true);
    expect(grown.members![0].dbSizeBytes).toBe(310 * MIB);
  });

  it('keeps a size within one MiB of what it reported, and moves past it', () => {
    expect(steadySize(100 * MIB + 600 * 1024, 100 * MIB)).toBe(100 * MIB);
    expect(steadySize(101 * MIB + 600 * 1024, 100 * MIB)).toBe(102 * MIB);
    expect(steadySize(undefined, 100 * MIB)).toBeUndefined();
  });

  it('names the alarm and its members in an Alarm condition; NOSPACE leaves the cluster Available, saying writes are refused', () => {
    const nospace = desiredStatus(observed(
      [member(0, 1024 * MIB, 300 * MIB, { alarms: ['NOSPACE'] }), member(1, 1024 * MIB, 300 * MIB), member(2, 1024 * MIB, 300 * MIB)],
      { alarms: [{ member: 'kv-0', alarm: 'NOSPACE' }], reason: 'Recovering', message: 'defragmenting kv-1 (1024 MiB, 71% free) to recover from NOSPACE' },
    ), undefined, NOW);
    expect(condition(nospace, 'Alarm')).toMatchObject({ status: 'True', reason: 'NOSPACE', message: 'NOSPACE on kv-0 (the database reached its quota: the cluster refuses writes)' });
    expect(condition(nospace, 'Available')).toMatchObject({ status: 'True', reason: 'QuorumAvailable' });
    expect(condition(nospace, 'Available')!.message).toMatch(/writes are refused until NOSPACE is disarmed/);
    expect(condition(nospace, 'Maintenance')).toMatchObject({ status: 'True', reason: 'Recovering', message: expect.stringContaining('kv-1') });
    expect(nospace.members![0].alarms).toEqual(['NOSPACE']);
    expect(nospace.databaseFullPercent).toBe(100);

    const both = desiredStatus(observed([member(0, MIB, MIB), member(1, MIB, MIB), member(2, MIB, MIB)], {
      alarms: [{ member: 'kv-0', alarm: 'NOSPACE' }, { member: 'kv-2', alarm: 'CORRUPT' }, { member: 'kv-1', alarm: 'NOSPACE' }],
    }), undefined, NOW);
    expect(condition(both, 'Alarm')).toMatchObject({ reason: 'CORRUPT', message: expect.stringMatching(/^CORRUPT on kv-2 .*; NOSPACE on kv-0, kv-1 /) });
  });

  it('says which gate holds maintenance back', () => {
    const held = desiredStatus(observed([member(0, MIB, MIB), member(1, MIB, MIB), member(2, MIB, MIB)], { reason: 'Held', message: 'waiting for the learner kv-3 to be promoted' }), undefined, NOW);
    expect(condition(held, 'Maintenance')).toMatchObject({ status: 'False', reason: 'Held', message: 'waiting for the learner kv-3 to be promoted' });
  });

  it('reports no sizes and no maintenance conditions without a maintenance observation (members unreachable, or another engine)', () => {
    const status = desiredStatus({ ...observed([member(0, MIB, MIB)]), maintenance: undefined }, undefined, NOW);
    expect(status.members![0]).toEqual({ name: 'kv-0', role: 'leader', healthy: true });
    expect(status.quotaBytes).toBeUndefined();
    expect(condition(status, 'Maintenance')).toBeUndefined();
  });
});
