/**
 * What a successful backup deletes, and where backups live: pure functions.
 */
import { backupsToDelete, type StoredBackup } from '../../backup/retention.js';
import { backupStamp, clusterFolder, parseS3Path } from '../../backup/s3-location.js';
import { snapshotSource } from '../../backup/run-backup.js';
import type { MemberStatus } from '../../engines/membership.js';

const stamp = (day: number) => `202611${String(day).padStart(2, '0')}T020000.000Z`;
const complete = (day: number): StoredBackup => ({ stamp: stamp(day), complete: true });
const unfinished = (day: number): StoredBackup => ({ stamp: stamp(day), complete: false });

describe('retention after a successful backup', () => {
  it('keeps the newest `retain` complete backups and deletes older ones, whatever order they are listed in', () => {
    const deleted = backupsToDelete([complete(3), complete(1), complete(5), complete(4), complete(2)], 3);
    expect(deleted.map((b) => b.stamp)).toEqual([stamp(2), stamp(1)]);
  });

  it('deletes unfinished backups older than the newest complete one, and leaves a newer one (a run under way) alone', () => {
    const deleted = backupsToDelete([unfinished(1), complete(2), unfinished(3), complete(4), unfinished(5)], 7);
    expect(deleted.map((b) => b.stamp)).toEqual([stamp(3), stamp(1)]);
  });

  it('deletes nothing while no backup is complete: an unfinished one may be all there is', () => {
    expect(backupsToDelete([unfinished(1), unfinished(2)], 1)).toEqual([]);
  });

  it('never deletes the newest complete backup, even when asked to keep none', () => {
    expect(backupsToDelete([complete(1), complete(2)], 0).map((b) => b.stamp)).toEqual([stamp(1)]);
  });
});

describe('where backups live', () => {
  it('reads s3://bucket/prefix, with or without a prefix or a trailing slash', () => {
    expect(parseS3Path('s3://acme-kv-backups/shop/orders/')).toEqual({ bucket: 'acme-kv-backups', prefix: 'shop/orders' });
    expect(parseS3Path('s3://acme-kv-backups')).toEqual({ bucket: 'acme-kv-backups', prefix: '' });
    expect(() => parseS3Path('https://acme-kv-backups/x')).toThrow(/is not an S3 location of the form s3:\/\/bucket\/prefix/);
    expect(() => parseS3Path('s3://Bad_Bucket/x')).toThrow(/not an S3 location/);
  });

  it('gives every cluster its own folder and every backup a fixed-width, time-ordered name', () => {
    expect(clusterFolder({ bucket: 'b', prefix: 'p/q' }, 'shop', 'orders')).toBe('p/q/shop/orders/');
    expect(clusterFolder({ bucket: 'b', prefix: '' }, 'shop', 'orders')).toBe('shop/orders/');
    expect(backupStamp(new Date(Date.UTC(2026, 10, 23, 9, 30, 0, 7)))).toBe('20261123T093000.007Z');
  });
});

describe('the member a snapshot is taken from', () => {
  const member = (i: number, over: Partial<MemberStatus> = {}): MemberStatus => ({ id: `${i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: true, leader: false, ...over });

  it('is a healthy follower, never a learner; the leader only when no follower is healthy', () => {
    expect(snapshotSource([member(0, { leader: true }), member(1), member(2)])?.name).toBe('kv-2');
    expect(snapshotSource([member(0), member(1, { healthy: false }), member(2, { leader: true }), member(3, { learner: true })])?.name).toBe('kv-0');
    expect(snapshotSource([member(0, { leader: true }), member(1, { healthy: false })])?.name).toBe('kv-0');
    expect(snapshotSource([member(0, { healthy: false }), member(1, { healthy: false })])).toBeUndefined();
  });
});
