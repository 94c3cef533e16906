/**
 * What the informers keep of each object. Memory grows with the fleet
 * (about 30 KB of heap per cluster before this), so the caches drop what
 * the reconciler never reads:
 * - owned objects: our own managedFields entry (the largest, listing every
 *   field we set), entries written through the status subresource (they own
 *   only status fields, which drift never compares), and kubectl's
 *   last-applied annotation (a copy of the whole object). Drift compares live
 *   values and asks the remaining entries who changed them (drift.ts).
 * - DistributedKVs: managedFields altogether; nothing reads a cluster's
 *   field owners, and a write that omits managedFields leaves them as they are.
 */
import type { CachedObject } from '../../kube/informer.js';
import type { ManagedFieldsEntry } from '../core/drift.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

export function slimOwnedObject(object: CachedObject, fieldManager: string): CachedObject {
  const metadata = object.metadata;
  if (Array.isArray(metadata.managedFields)) {
    metadata.managedFields = (metadata.managedFields as ManagedFieldsEntry[]).filter((m) => m.manager !== fieldManager && m.subresource !== 'status');
  }
  if (metadata.annotations?.[LAST_APPLIED]) {
    const { [LAST_APPLIED]: _dropped, ...rest } = metadata.annotations;
    metadata.annotations = rest;
  }
  return object;
}

export function slimCluster(object: CachedObject): CachedObject {
  delete object.metadata.managedFields;
  return object;
}
