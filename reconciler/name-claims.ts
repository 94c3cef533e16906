/**
 * The object names a cluster claims in its namespace, as `Kind/name`. Two
 * clusters claiming one name (`kv` and `kv-peers` both want Service
 * `kv-peers`) would fight over one object; the controller indexes its
 * cluster cache by these claims to find such a clash without a request.
 */
import type { GeneratorConfig } from '../api/config.js';
import { clusterIdentity } from '../constructs/cluster-identity.js';
import type { CachedObject } from './informer.js';

export function claimedNames(cluster: CachedObject, config: GeneratorConfig): string[] {
  const id = clusterIdentity(cluster.metadata.name, config);
  const claims = [
    `StatefulSet/${id.statefulSetName}`,
    `Service/${id.headlessServiceName}`,
    `Service/${id.clientServiceName}`,
    `PodDisruptionBudget/${id.podDisruptionBudgetName}`,
  ];
  if (cluster.spec?.backup) claims.push(`CronJob/${id.backupCronJobName}`);
  const namespace = cluster.metadata.namespace ?? '';
  return claims.map((claim) => `${namespace}/${claim}`);
}

/**
 * Of two clusters claiming one name, the older keeps it (then the smaller
 * name): a cluster that already runs is never the one refused.
 */
export function precedes(a: CachedObject, b: CachedObject): boolean {
  const at = a.metadata.creationTimestamp ?? '';
  const bt = b.metadata.creationTimestamp ?? '';
  return at !== bt ? at < bt : a.metadata.name < b.metadata.name;
}
