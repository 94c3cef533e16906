/**
 * Changes to a running cluster that a StatefulSet cannot take. A new name
 * template (`names.statefulSet`) would create a second StatefulSet, prune the
 * first and start every member on fresh, empty volumes; a new selector
 * (`labels`, `selectorLabels`), headless Service name (`serviceName`) or
 * volume template is rejected by the API server and would fail every apply
 * forever. The controller refuses them, names the configuration key, and
 * touches nothing: the previous configuration, or an explicit migration,
 * is the way forward.
 */
import type { KubeObject } from '../../model/kube-object.js';
import { findDrift } from './drift.js';
import type { CachedObject } from '../../kube/informer.js';

/** Immutable StatefulSet fields, and the configuration that decides each. */
const IMMUTABLE: ReadonlyArray<{ readonly prefix: string; readonly decidedBy: string }> = [
  { prefix: 'spec.selector', decidedBy: 'labels / selectorLabels' },
  { prefix: 'spec.serviceName', decidedBy: 'names.headlessService' },
  { prefix: 'spec.volumeClaimTemplates', decidedBy: 'the storage section, dataPath or a StatefulSet patch' },
];

/**
 * Why the cluster's StatefulSet cannot become `desired`, one message per
 * reason; empty when it can. `owned` are the StatefulSets this cluster
 * controls; `live` is the one named as desired, if it exists.
 */
export function refusedStatefulSetChanges(desired: KubeObject, live: CachedObject | undefined, owned: readonly CachedObject[], fieldManager: string): string[] {
  const refused: string[] = [];
  for (const other of owned) {
    if (other.metadata.name === desired.metadata.name) continue;
    refused.push(`StatefulSet/${other.metadata.name} holds this cluster's members, but the configuration now names it ${desired.metadata.name} (names.statefulSet): `
      + 'a new name would start every member on new, empty volumes and delete the old ones. Restore the previous name template, or migrate the cluster explicitly');
  }
  if (live) {
    const paths = findDrift(desired, live, fieldManager).map((f) => f.path);
    for (const { prefix, decidedBy } of IMMUTABLE) {
      const changed = paths.filter((p) => p === prefix || p.startsWith(`${prefix}.`) || p.startsWith(`${prefix}[`));
      if (changed.length > 0) {
        refused.push(`StatefulSet/${desired.metadata.name}: ${changed.join(', ')} cannot change on a StatefulSet (decided by ${decidedBy} in the configuration). Restore the previous value, or migrate the cluster explicitly`);
      }
    }
  }
  return refused;
}
