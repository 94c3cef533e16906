/**
 * A cluster's s3Path is its own folder (model/backup-folder.ts): a cluster
 * whose folder is another's, or lies inside or around another's, is refused
 * as a name clash is (Degraded/S3PathClash, nothing written), and the one
 * that keeps the folder goes on working. The rule is `dkv validate`'s
 * across files (constructs/s3-path-clashes.ts), over the cluster cache,
 * which is indexed by these claims so a clash is found without a request
 * or a scan:
 *   - `s3path:<folder>`: the cluster backs up into that folder;
 *   - `s3path-in:<folder>`: the cluster's folder lies inside that folder.
 * Any namespaces: a folder is a place in S3, not in Kubernetes.
 */
import type { CachedObject, Informer } from '../../kube/informer.js';
import { backupFolderOf, enclosingFolders, folderOverlap, overlapPhrase, s3PathOf } from '../../model/backup-folder.js';
import { precedes } from './name-claims.js';

const OWN = 's3path:';
const INSIDE = 's3path-in:';

const folderOf = (cluster: CachedObject): string | undefined => backupFolderOf((cluster.spec as { backup?: { s3Path?: unknown } } | undefined)?.backup?.s3Path);

/** The index keys of a cluster's backup folder (none without backups). */
export function s3PathClaims(cluster: CachedObject): string[] {
  const folder = folderOf(cluster);
  return folder ? [`${OWN}${folder}`, ...enclosingFolders(folder).map((f) => `${INSIDE}${f}`)] : [];
}

/** Every other cached cluster whose folder is this one's, or lies inside or around it. */
export function s3PathRivals(clusters: Pick<Informer, 'byIndex'>, cluster: CachedObject): CachedObject[] {
  const folder = folderOf(cluster);
  if (!folder) return [];
  const keys = [`${OWN}${folder}`, ...enclosingFolders(folder).map((f) => `${OWN}${f}`), `${INSIDE}${folder}`];
  const rivals = new Map<string, CachedObject>();
  for (const key of keys) for (const other of clusters.byIndex(key)) if (other.metadata.uid !== cluster.metadata.uid) rivals.set(other.metadata.uid ?? '', other);
  return [...rivals.values()];
}

/** The folder a cluster's backups go into now: its live CronJob's DKV_S3_PATH (the cache keeps owned objects' specs). */
export function liveBackupFolder(cronJobs: Pick<Informer, 'byIndex'> | undefined, cluster: CachedObject): string | undefined {
  const cronJob = cronJobs?.byIndex(cluster.metadata.uid ?? '').find((o) => o.metadata.namespace === cluster.metadata.namespace);
  const containers = (cronJob?.spec as { jobTemplate?: { spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } } } } | undefined)
    ?.jobTemplate?.spec?.template?.spec?.containers ?? [];
  return backupFolderOf(containers.flatMap((c) => c.env ?? []).find((e) => e.name === 'DKV_S3_PATH')?.value);
}

/**
 * Why this cluster may not back up into its s3Path, or undefined. Of two
 * clusters whose folders meet, the one whose backups already go there keeps
 * it (its CronJob writes into the other's folder, and not the other way
 * round), so a running cluster is never refused because another moved onto
 * its folder; otherwise the older (then the smaller name, then the namespace).
 */
export function s3PathClash(clusters: Pick<Informer, 'byIndex'>, cluster: CachedObject, liveFolder: (c: CachedObject) => string | undefined): string | undefined {
  const folder = folderOf(cluster);
  if (!folder) return undefined;
  const writesInto = (c: CachedObject, into: string): boolean => {
    const live = liveFolder(c);
    return live !== undefined && folderOverlap(live, into) !== undefined;
  };
  // Of several rivals that keep their folder against this cluster, the message names the one whose backups
  // already go there, else the oldest: the index's order would name, now and then, a rival refused itself.
  const keepers = s3PathRivals(clusters, cluster).filter((rival) => {
    // A cluster being deleted still holds its folder: its final backup goes there.
    const rivalHolds = writesInto(rival, folder);
    const thisHolds = writesInto(cluster, folderOf(rival)!);
    return rivalHolds !== thisHolds ? rivalHolds : olderThan(rival, cluster);
  });
  const holds = (c: CachedObject): boolean => writesInto(c, folder);
  const rival = keepers.sort((a, b) => Number(holds(b)) - Number(holds(a)) || (olderThan(a, b) ? -1 : 1))[0];
  if (rival) {
    const theirs = folderOf(rival)!;
    const how = overlapPhrase(folderOverlap(folder, theirs)!, theirs, `DistributedKV ${rival.metadata.namespace}/${rival.metadata.name}`);
    return `spec.backup.s3Path: this cluster would back up into ${s3PathOf(folder)}, ${how}, which keeps it: an s3Path is one cluster's own folder, `
      + 'and each cluster\'s retention would count and delete the other\'s backups; give this cluster a folder apart from every other\'s';
  }
  return undefined;
}

/** A total order (two clusters in different namespaces may share a name and a creation second). */
function olderThan(a: CachedObject, b: CachedObject): boolean {
  if (precedes(a, b)) return true;
  if (precedes(b, a)) return false;
  return `${a.metadata.namespace}/${a.metadata.uid}` < `${b.metadata.namespace}/${b.metadata.uid}`;
}
