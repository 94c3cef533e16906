/**
 * Which backups to delete after a success: every complete backup beyond the
 * newest `retain`, and every unfinished one (no manifest) older than the
 * newest complete backup; an unfinished backup newer than that may be a run
 * still under way and is left alone. The backups may come from more than
 * one folder (a cluster's own and its legacy one, s3-location.ts): they are
 * counted together, by time, so the legacy ones age out like any other.
 */

export interface StoredBackup {
  /** Its folder's name: the start time, sortable as text. */
  readonly stamp: string;
  /** The key prefix of its folder, `<cluster folder><stamp>/`: what deleting it removes. */
  readonly folder: string;
  readonly complete: boolean;
}

export function backupsToDelete(backups: readonly StoredBackup[], retain: number): StoredBackup[] {
  const newestFirst = [...backups].sort((a, b) => (a.stamp < b.stamp ? 1 : a.stamp > b.stamp ? -1 : 0));
  const complete = newestFirst.filter((b) => b.complete);
  const newestComplete = complete[0]?.stamp;
  const beyond = new Set(complete.slice(Math.max(retain, 1)));
  return newestFirst.filter((b) => beyond.has(b) || (!b.complete && newestComplete !== undefined && b.stamp < newestComplete));
}
