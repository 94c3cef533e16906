import type { ValidResource } from '../api/validate.js';
import { backupFolderOf, enclosingFolders, folderOverlap, type FolderOverlap } from '../model/backup-folder.js';

/** One cluster's backup folder, from its `spec.backup.s3Path`. */
export interface S3PathClaim {
  /** The cluster's position in the list given to findS3PathClashes. */
  readonly index: number;
  readonly resource: ValidResource;
  /** `bucket/prefix/` (model/backup-folder.ts). */
  readonly folder: string;
}

/** Two clusters whose backup folders are one, or one inside the other (model/backup-folder.ts says why that is refused). */
export interface S3PathClash {
  /** The cluster that comes first in the list. */
  readonly first: S3PathClaim;
  readonly second: S3PathClaim;
  /** The second's folder against the first's: `same`, `inside` it, or `holds` it. */
  readonly overlap: FolderOverlap;
}

/**
 * Every pair of DistributedKVs whose backup folders are one, or one inside
 * the other, in any namespaces: a backup folder is a place in S3, not in
 * Kubernetes. Each pair once, ordered by the list; a cluster defined twice is
 * the duplicate check's, not a clash. Found through each folder's enclosing
 * folders (a handful), not by comparing every pair: a fleet of thousands
 * stays linear.
 */
export function findS3PathClashes(resources: readonly ValidResource[]): S3PathClash[] {
  const claims: S3PathClaim[] = [];
  resources.forEach((resource, index) => {
    const folder = backupFolderOf(resource.spec.backup?.s3Path);
    if (folder) claims.push({ index, resource, folder });
  });
  const byFolder = new Map<string, S3PathClaim[]>();
  for (const claim of claims) {
    const same = byFolder.get(claim.folder);
    if (same) same.push(claim);
    else byFolder.set(claim.folder, [claim]);
  }
  const clusterKey = (r: ValidResource): string => `${r.metadata.namespace ?? ''}/${r.metadata.name}`;
  const clashes: S3PathClash[] = [];
  for (const claim of claims) {
    // From the inner cluster's side only (and, for one folder, from the later one's), so each pair is found once.
    for (const folder of [claim.folder, ...enclosingFolders(claim.folder)]) {
      for (const other of byFolder.get(folder) ?? []) {
        if (folder === claim.folder && other.index >= claim.index) continue;
        if (clusterKey(other.resource) === clusterKey(claim.resource)) continue;
        const [first, second] = other.index < claim.index ? [other, claim] : [claim, other];
        clashes.push({ first, second, overlap: folderOverlap(second.folder, first.folder)! });
      }
    }
  }
  return clashes.sort((a, b) => a.second.index - b.second.index || a.first.index - b.first.index);
}
