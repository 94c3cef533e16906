/**
 * Where a cluster's backups live: `s3Path` (the spec's `backup.s3Path`,
 * `s3://bucket/some/prefix`) is the cluster's own folder, holding one folder
 * per backup named by its start time, sortable as text:
 *
 *   s3://bucket/some/prefix/20261123T093000.123Z/
 *     snapshot.db      the store's data (for etcd, its logical snapshot)
 *     manifest.json    written last: a folder without one is an unfinished backup
 *
 * Before, backups went one level deeper, under the cluster's namespace and
 * name (`s3://bucket/some/prefix/<namespace>/<name>/<stamp>/`), so that
 * clusters could share an s3Path. Those backups are still the cluster's:
 * the retention counts them with the new ones (and so deletes them in
 * time), and a restore names either kind of folder. No other cluster's
 * backups can be there: no two clusters' s3Paths may be one folder or one
 * inside the other (model/backup-folder.ts), so the legacy folder, which
 * lies inside this cluster's s3Path, is this cluster's alone.
 */

export interface S3Location {
  readonly bucket: string;
  /** Without a trailing slash; empty for the bucket's root. */
  readonly prefix: string;
}

export class S3PathError extends Error {}

export function parseS3Path(s3Path: string): S3Location {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(s3Path);
  if (!match) throw new S3PathError(`${JSON.stringify(s3Path)} is not an S3 location of the form s3://bucket/prefix`);
  return { bucket: match[1], prefix: (match[2] ?? '').replace(/\/+$/, '') };
}

/**
 * How a runner places a cluster's backups under its s3Path:
 *   - `folder`: the s3Path is the cluster's own folder (`<s3Path>/<stamp>/`),
 *     and backups of the legacy layout under it count as the cluster's;
 *   - `by-cluster`: the layout before, `<s3Path>/<namespace>/<name>/<stamp>/`,
 *     for a CronJob written before the change (it does not say `folder`): its
 *     s3Path may be shared with other clusters, so it reads nothing else.
 */
export type BackupLayout = 'folder' | 'by-cluster';
export const BACKUP_LAYOUTS: readonly BackupLayout[] = ['folder', 'by-cluster'];

/** The folders of one cluster's backups, each a key prefix with a trailing slash. */
export interface ClusterFolders {
  /** Where a new backup goes. */
  readonly current: string;
  /** Every folder the cluster's backups may be in (the current one first): what retention counts. */
  readonly all: readonly string[];
}

export function clusterFolders(location: S3Location, cluster: { readonly namespace: string; readonly name: string }, layout: BackupLayout): ClusterFolders {
  const own = location.prefix ? `${location.prefix}/` : '';
  const legacy = `${own}${cluster.namespace}/${cluster.name}/`;
  return layout === 'folder' ? { current: own, all: [own, legacy] } : { current: legacy, all: [legacy] };
}

/** A backup's folder name: its start time, UTC, to the millisecond, fixed width so text order is time order (`20261123T093000.123Z`). */
export function backupStamp(at: Date): string {
  return at.toISOString().replace(/[-:]/g, '');
}

const STAMP = /^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z$/;

/**
 * The backup a key belongs to, when it is a file directly inside a backup's
 * folder directly inside `folder` (`<folder><stamp>/<file>`); anything
 * else under `folder` (a legacy `<namespace>/<name>/` folder below a new
 * one, a stray object) is no backup of it.
 */
export function backupFileOf(folder: string, key: string): { readonly stamp: string; readonly file: string } | undefined {
  if (!key.startsWith(folder)) return undefined;
  const parts = key.slice(folder.length).split('/');
  return parts.length === 2 && STAMP.test(parts[0]) && parts[1] ? { stamp: parts[0], file: parts[1] } : undefined;
}

export const SNAPSHOT_FILE = 'snapshot.db';
export const MANIFEST_FILE = 'manifest.json';

/** One backup: its bucket, and its folder's key with a trailing slash. */
export interface BackupFolder {
  readonly bucket: string;
  readonly folder: string;
}

/** A backup's folder as `dkv backup` prints it (`s3://bucket/prefix/<stamp>/`, or the legacy `.../<namespace>/<name>/<stamp>/`), as a restore names it. */
export function parseBackupUrl(url: string): BackupFolder {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/((?:[a-zA-Z0-9._-]+\/)*[0-9]{8}T[0-9]{6}\.[0-9]{3}Z)\/?$/.exec(url);
  if (!match) throw new S3PathError(`${JSON.stringify(url)} is not one backup's folder of the form s3://bucket/prefix/<YYYYMMDDThhmmss.mmmZ>/`);
  return { bucket: match[1], folder: `${match[2]}/` };
}

/** Whether a restore's source names a backup in S3 (else it names a VolumeSnapshot). */
export const isS3Source = (from: string): boolean => from.startsWith('s3://');
