/**
 * Growing members' volumes (after ECK's pvc_expansion.go and Strimzi's
 * PvcReconciler; ../shared/notes/day2-operations.md): a StatefulSet's
 * volume claim template cannot change, but its claims can grow where the
 * StorageClass allows it. One step per reconcile:
 *
 *   1. refuse a smaller size (volumes never shrink), naming spec.storage.size;
 *   2. blocked while the StorageClass does not allow expansion, naming it;
 *   3. grow one member's claim at a time, each only after the previous one
 *      reports the new capacity;
 *   4. then replace the StatefulSet: delete it leaving its pods running
 *      (orphan), and create it with the new template, which adopts them. The
 *      replacement itself restarts no member. Where the members' quota
 *      derives from their volume (model/backend-quota.ts), the new pod
 *      template carries the raised quota (until now the render kept the one
 *      the live volumes have room for: synthesizeCluster's volumeSizeNow);
 *      the adopted pods, labelled with the old template's revision, are
 *      outdated, and the upgrade step restarts them one at a time, the
 *      leader last (engines/etcd/upgrade.ts). Only once the live
 *      StatefulSet controls every member pod: the garbage collector orphans
 *      the dependents its graph knows, so a pod adopted in the same moment
 *      as the delete keeps an owner reference to a deleted StatefulSet and is
 *      then deleted as garbage (a member restart the step promised not to
 *      make).
 *
 * Decided from the live StatefulSet and claims only: a controller that died
 * between the orphaning delete and the create finds no StatefulSet and
 * creates it, which is the step it was in.
 */
import { quantityValue } from '../model/quantity.js';

export interface Claim {
  readonly name: string;
  /** spec.resources.requests.storage */
  readonly requested: string;
  /** status.capacity.storage, once bound (and after each resize, once the volume grew). */
  readonly capacity?: string;
}

export interface StorageInput {
  /** The size the spec asks for. */
  readonly desired: string;
  /** The size in the live StatefulSet's volume claim template. */
  readonly live: string;
  /** The claims' StorageClass: its name and whether it allows expansion (undefined: not found). */
  readonly storageClass?: { readonly name: string; readonly allowVolumeExpansion: boolean };
  readonly storageClassName: string;
  /** The members' claims, in ordinal order. */
  readonly claims: readonly Claim[];
  /**
   * Member pods that the live StatefulSet does not control (yet): orphans it
   * has still to adopt, or pods still owned by a StatefulSet it replaced.
   */
  readonly podsNotAdopted: readonly string[];
}

export type StorageStep =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'refused'; readonly message: string }
  | { readonly kind: 'blocked'; readonly message: string }
  | { readonly kind: 'resizeClaim'; readonly claim: string; readonly message: string }
  | { readonly kind: 'waiting'; readonly message: string }
  | { readonly kind: 'replaceStatefulSet'; readonly message: string };

const at = (q: string | undefined): number => (q === undefined ? 0 : quantityValue(q) ?? 0);

export function decideStorageStep(input: StorageInput): StorageStep {
  const desired = at(input.desired);
  const live = at(input.live);
  if (desired === live) return { kind: 'unchanged' };
  if (desired < live) {
    return { kind: 'refused', message: `spec.storage.size: ${input.desired} is smaller than the members' volumes (${input.live}); volumes cannot shrink. Restore ${input.live} or more` };
  }
  if (!input.storageClass) {
    return { kind: 'blocked', message: `spec.storage.size: growing to ${input.desired} needs the StorageClass ${input.storageClassName}, which does not exist` };
  }
  if (!input.storageClass.allowVolumeExpansion) {
    return { kind: 'blocked', message: `spec.storage.size: growing to ${input.desired} needs StorageClass ${input.storageClass.name} to allow volume expansion (allowVolumeExpansion: true)` };
  }
  for (const claim of input.claims) {
    if (at(claim.requested) < desired) return { kind: 'resizeClaim', claim: claim.name, message: `growing ${claim.name} from ${claim.requested} to ${input.desired}` };
    if (at(claim.capacity) < desired) return { kind: 'waiting', message: `waiting for ${claim.name} to report ${input.desired} (it reports ${claim.capacity ?? 'no capacity'})` };
  }
  if (input.podsNotAdopted.length > 0) {
    return { kind: 'waiting', message: `every claim holds ${input.desired}; waiting for the StatefulSet to adopt ${input.podsNotAdopted.join(', ')} before replacing it` };
  }
  return { kind: 'replaceStatefulSet', message: `every claim holds ${input.desired}: replacing the StatefulSet (its pods keep running) with the new volume template` };
}
