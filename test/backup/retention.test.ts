/**
 * What a successful backup deletes, and where backups live: pure functions.
 */
import { backupsToDelete, type StoredBackup } from '../../backup/retention.js';
import { backupFileOf, backupStamp, clusterFolders, parseBackupUrl, parseS3Path } from '../../backup/s3-location.js';
import { snapshotSource } from '../../backup/run-backup.js';
import type { MemberStatus } from '../../engines/membership.js';

const stamp = (day: number) => `202611${String(day).padStart(2, '0')}T020000.000Z`;
const complete = (day: number, folder = 'p/'): StoredBackup => ({ stamp: stamp(day), folder: `${folder}${stamp(day)}/`, complete: true });
const unfinished = (day: number, folder = 'p/'): StoredBackup => ({ stamp: stamp(day), folder: `${folder}${stamp(day)}/`, complete: false });

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

  it('counts the backups of the cluster\'s legacy folder with its own, by time, so the legacy ones age out like any other', () => {
    const legacy = 'p/shop/orders/';
    const deleted = backupsToDelete([complete(1, legacy), unfinished(2, legacy), complete(3, legacy), complete(4), complete(5)], 3);
    expect(deleted.map((b) => b.folder)).toEqual([`${legacy}${stamp(2)}/`, `${legacy}${stamp(1)}/`]);
  });

  it('tells apart two backups with one stamp in two folders: each is deleted by its own folder', () => {
    const deleted = backupsToDelete([complete(1, 'p/shop/orders/'), complete(1), complete(2)], 1);
    expect(deleted.map((b) => b.folder).sort()).toEqual([`p/${stamp(1)}/`, `p/shop/orders/${stamp(1)}/`]);
  });
});

describe('where backups live', () => {
  it('reads s3://bucket/prefix, with or without a prefix or a trailing slash', () => {
    expect(parseS3Path('s3://acme-kv-backups/shop/orders/')).toEqual({ bucket: 'acme-kv-backups', prefix: 'shop/orders' });
    expect(parseS3Path('s3://acme-kv-backups')).toEqual({ bucket: 'acme-kv-backups', prefix: '' });
    expect(() => parseS3Path('https://acme-kv-backups/x')).toThrow(/is not an S3 location of the form s3:\/\/bucket\/prefix/);
    expect(() => parseS3Path('s3://Bad_Bucket/x')).toThrow(/not an S3 location/);
  });

  const orders = { namespace: 'shop', name: 'orders' };

  it('writes new backups straight into s3Path, the cluster\'s own folder, and counts its legacy <namespace>/<name>/ folder as its own', () => {
    expect(clusterFolders({ bucket: 'b', prefix: 'p/q' }, orders, 'folder')).toEqual({ current: 'p/q/', all: ['p/q/', 'p/q/shop/orders/'] });
    expect(clusterFolders({ bucket: 'b', prefix: '' }, orders, 'folder')).toEqual({ current: '', all: ['', 'shop/orders/'] });
    expect(backupStamp(new Date(Date.UTC(2026, 10, 23, 9, 30, 0, 7)))).toBe('20261123T093000.007Z');
  });

  it('keeps the layout before for a runner that does not say folder (a CronJob written before): its s3Path may be shared, so it reads nothing else', () => {
    expect(clusterFolders({ bucket: 'b', prefix: 'p/q' }, orders, 'by-cluster')).toEqual({ current: 'p/q/shop/orders/', all: ['p/q/shop/orders/'] });
  });

  it('takes as a folder\'s backups only files directly in a <stamp>/ folder directly inside it', () => {
    const s = stamp(1);
    expect(backupFileOf('p/', `p/${s}/manifest.json`)).toEqual({ stamp: s, file: 'manifest.json' });
    // The legacy folder below the new one, a nested folder that merely looks like a stamp, strays: none is a backup of p/.
    expect(backupFileOf('p/', `p/shop/orders/${s}/manifest.json`)).toBeUndefined();
    expect(backupFileOf('p/', `p/${s}/${stamp(2)}/manifest.json`)).toBeUndefined();
    expect(backupFileOf('p/', `p/notes.txt`)).toBeUndefined();
    expect(backupFileOf('p/', `p/${s}/`)).toBeUndefined();
    expect(backupFileOf('p/', `px/${s}/manifest.json`)).toBeUndefined();
    expect(backupFileOf('p/shop/orders/', `p/shop/orders/${s}/snapshot.db`)).toEqual({ stamp: s, file: 'snapshot.db' });
  });

  it('restores from a backup folder of either layout, named in full', () => {
    expect(parseBackupUrl(`s3://acme/p/q/${stamp(1)}/`)).toEqual({ bucket: 'acme', folder: `p/q/${stamp(1)}/` });
    expect(parseBackupUrl(`s3://acme/p/q/shop/orders/${stamp(1)}`)).toEqual({ bucket: 'acme', folder: `p/q/shop/orders/${stamp(1)}/` });
    expect(() => parseBackupUrl('s3://acme/p/q/')).toThrow(/s3:\/\/bucket\/prefix\/<YYYYMMDDThhmmss\.mmmZ>\//);
  });
});

describe('the member a snapshot is taken from', () => {
  const member = (i: number, over: Partial<MemberStatus> = {}): MemberStatus => ({ id: `${i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: true, leader: false, alarms: [], ...over });

  it('is a healthy follower, never a learner; the leader only when no follower is healthy', () => {
    expect(snapshotSource([member(0, { leader: true }), member(1), member(2)])?.name).toBe('kv-2');
    expect(snapshotSource([member(0), member(1, { healthy: false }), member(2, { leader: true }), member(3, { learner: true })])?.name).toBe('kv-0');
    expect(snapshotSource([member(0, { leader: true }), member(1, { healthy: false })])?.name).toBe('kv-0');
    expect(snapshotSource([member(0, { healthy: false }), member(1, { healthy: false })])).toBeUndefined();
  });
});
