/**
 * A cluster's s3Path is its own folder: every backup in it is the
 * cluster's, and its retention deletes what it counts there (including its
 * legacy folder `<s3Path>/<namespace>/<name>/`, backup/s3-location.ts). So
 * no two clusters' s3Paths may be one folder, nor one inside the other:
 *   - one folder: their backups mix, and each one's retention deletes the
 *     other's;
 *   - one inside the other (`s3://b/x` and `s3://b/x/shop/orders`): the
 *     inner folder may be the outer cluster's legacy folder, whose backups
 *     the outer cluster's retention counts and deletes; and whoever empties
 *     the outer cluster's folder (`aws s3 rm --recursive`) empties the inner.
 * Folders compare as S3 compares keys, as text, but only at a `/`:
 * `s3://b/x` and `s3://b/xy` are apart, `s3://b/x` and `s3://b/x/` are one.
 */

/** An s3Path as the folder it names, `bucket/prefix/` (one trailing slash); undefined for what is no s3Path. */
export function backupFolderOf(s3Path: unknown): string | undefined {
  if (typeof s3Path !== 'string' || !s3Path.startsWith('s3://')) return undefined;
  const path = s3Path.slice('s3://'.length).replace(/\/+$/, '');
  return path ? `${path}/` : undefined;
}

/** The folders that hold `folder`, outermost first: `b/`, `b/x/` for `b/x/y/`. */
export function enclosingFolders(folder: string): string[] {
  const enclosing: string[] = [];
  for (let slash = folder.indexOf('/'); slash >= 0 && slash < folder.length - 1; slash = folder.indexOf('/', slash + 1)) {
    enclosing.push(folder.slice(0, slash + 1));
  }
  return enclosing;
}

/** How two clusters' backup folders meet: `same` folder, or the first `inside` (or `holds`) the second; undefined: apart. */
export type FolderOverlap = 'same' | 'inside' | 'holds';

export function folderOverlap(a: string, b: string): FolderOverlap | undefined {
  if (a === b) return 'same';
  if (a.startsWith(b)) return 'inside';
  if (b.startsWith(a)) return 'holds';
  return undefined;
}

/** An s3Path as a user writes it, for messages (`s3://b/x`). */
export const s3PathOf = (folder: string): string => `s3://${folder.replace(/\/$/, '')}`;

/**
 * How a folder meets `theirs`, the folder `other` (a cluster, as a message
 * names it) backs up into, in the words `dkv validate` and the controller
 * both use: `the folder <other> backs up into too`, `inside s3://…, the
 * folder <other> backs up into`, `which holds s3://…, the folder …`.
 */
export function overlapPhrase(overlap: FolderOverlap, theirs: string, other: string): string {
  return overlap === 'same' ? `the folder ${other} backs up into too`
    : overlap === 'inside' ? `inside ${s3PathOf(theirs)}, the folder ${other} backs up into`
      : `which holds ${s3PathOf(theirs)}, the folder ${other} backs up into`;
}
