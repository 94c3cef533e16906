/**
 * Whose object is it? The controller writes an object only if it is this
 * cluster's: it carries the cluster's controlling owner reference, or it was
 * applied from this cluster's own `dkv synth` output (no controller, and
 * exactly the desired hash). Anything else that happens to have the name is
 * someone else's (an application's Service `orders`, another cluster's
 * `kv-peers`), and taking it over would let anyone allowed to create a
 * DistributedKV rewrite and later delete objects they could not touch.
 */
import type { CachedObject } from '../../kube/informer.js';

export type Ownership =
  | { readonly ours: true }
  | { readonly ours: false; readonly owner: string };

export interface OwnerReference {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly uid?: string;
  readonly controller?: boolean;
}

/** The owner reference marked `controller` (the API server allows at most one). */
export function controllingOwner(object: CachedObject): OwnerReference | undefined {
  return ((object.metadata.ownerReferences ?? []) as OwnerReference[]).find((r) => r.controller);
}

/**
 * Decides from the live object alone. `detectOnly` clusters never write, and
 * their objects are applied by a GitOps tool without owner references: any
 * uncontrolled object is theirs to compare, whatever its hash.
 */
export function ownershipOf(live: CachedObject, clusterUid: string, desiredHash: string | undefined, hashAnnotation: string, detectOnly = false): Ownership {
  const controller = controllingOwner(live);
  if (controller) {
    return controller.uid === clusterUid ? { ours: true } : { ours: false, owner: `${controller.kind ?? 'object'}/${controller.name ?? controller.uid} (uid ${controller.uid})` };
  }
  if (detectOnly) return { ours: true };
  const hash = live.metadata.annotations?.[hashAnnotation];
  if (hash !== undefined && hash === desiredHash) return { ours: true };
  return { ours: false, owner: describeUncontrolled(live, hash) };
}

/** Who wrote an object nobody controls: its field managers, as `kubectl describe` users know them. */
function describeUncontrolled(live: CachedObject, hash: string | undefined): string {
  const managers = [...new Set(((live.metadata.managedFields ?? []) as { manager?: string }[]).map((m) => m.manager).filter(Boolean))];
  const by = managers.length > 0 ? `written by ${managers.join(', ')}` : 'no field managers recorded';
  return `no controlling owner, ${by}${hash !== undefined ? ', with another desired hash' : ''}`;
}
