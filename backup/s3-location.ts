/**
 * Where a cluster's backups live: `s3Path` (the spec's `backup.s3Path`,
 * `s3://bucket/some/prefix`), then the cluster's namespace and name, then one
 * folder per backup named by its start time, sortable as text:
 *
 *   s3://bucket/some/prefix/<namespace>/<name>/20261123T093000.123Z/
 *     snapshot.db      the store's data (for etcd, its logical snapshot)
 *     manifest.json    written last: a folder without one is an unfinished backup
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

/** The folder holding every backup of one cluster, with a trailing slash. */
export function clusterFolder(location: S3Location, namespace: string, name: string): string {
  return `${location.prefix ? `${location.prefix}/` : ''}${namespace}/${name}/`;
}

/** A backup's folder name: its start time, UTC, to the millisecond, fixed width so text order is time order (`20261123T093000.123Z`). */
export function backupStamp(at: Date): string {
  return at.toISOString().replace(/[-:]/g, '');
}

export const SNAPSHOT_FILE = 'snapshot.db';
export const MANIFEST_FILE = 'manifest.json';

/** One backup: its bucket, and its folder's key with a trailing slash. */
export interface BackupFolder {
  readonly bucket: string;
  readonly folder: string;
}

/** A backup's folder as `dkv backup` prints it (`s3://bucket/prefix/ns/name/<stamp>/`), as a restore names it. */
export function parseBackupUrl(url: string): BackupFolder {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/((?:[a-zA-Z0-9._-]+\/)*[0-9]{8}T[0-9]{6}\.[0-9]{3}Z)\/?$/.exec(url);
  if (!match) throw new S3PathError(`${JSON.stringify(url)} is not one backup's folder of the form s3://bucket/prefix/<namespace>/<name>/<YYYYMMDDThhmmss.mmmZ>/`);
  return { bucket: match[1], folder: `${match[2]}/` };
}

/** Whether a restore's source names a backup in S3 (else it names a VolumeSnapshot). */
export const isS3Source = (from: string): boolean => from.startsWith('s3://');
