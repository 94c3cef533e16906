/**
 * The object names a cluster claims in its namespace, as
 * `namespace/Kind/name`. Two clusters claiming one name (`kv` and `kv-peers`
 * both want Service `kv-peers`) would fight over one object; the controller
 * indexes its cluster cache by these claims to find such a clash without a
 * request. The names come from generatedNames, the rule `dkv validate` uses
 * across files, which reads only the name, namespace and whether there is a
 * backup section: a cached cluster, valid or not, has all three.
 */
import type { GeneratorConfig } from '../../api/config.js';
import type { ValidResource } from '../../api/validate.js';
import { generatedNames } from '../../constructs/name-clashes.js';
import type { CachedObject } from '../../kube/informer.js';

export function claimedNames(cluster: CachedObject, config: GeneratorConfig): string[] {
  const resource = { metadata: cluster.metadata, spec: cluster.spec ?? {} } as ValidResource;
  return generatedNames(resource, config).map((o) => `${o.namespace ?? ''}/${o.kind}/${o.name}`);
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
