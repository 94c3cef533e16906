/**
 * Creates an object only if no object of its name exists, in one request,
 * with the same server-side apply every other write uses.
 *
 * A server-side apply whose body carries `metadata.resourceVersion` makes
 * that version a precondition (kubernetes/kubernetes#63104): the API server
 * refuses the write with 409 Conflict unless the stored object has that
 * version, even with `force`. When there is no object, the version is not
 * compared and the apply creates it, its fields owned by our manager as any
 * apply's are (a POST would record them as an Update, which a later apply
 * does not take back). Version "1" is one no object ever has: etcd starts
 * at revision 1 and the first write is revision 2, and "0" would mean "no
 * precondition". So the apply creates, or fails because the name is taken.
 *
 * Why: a new cluster's objects are not in the controller's caches, which
 * hold only the objects with its labels (and, for a shard, only its
 * buckets), so each used to be read before its first write to learn
 * whether someone else's object has the name: 4.5 reads per new cluster on
 * a shard, as many requests as the writes. Now the write itself asks, and
 * the API server answers in the same step that creates: there is no moment
 * between a look and a write in which an application's object can appear
 * and then be taken over.
 */
import { KubeApiError } from '../../kube/client.js';
import type { KubeObject } from '../../model/kube-object.js';

/** The resourceVersion no stored object has (see above). */
export const NO_OBJECT_HAS_THIS_VERSION = '1';

/** `object` as a create-if-absent apply body. */
export function ifAbsent<T extends KubeObject>(object: T): T {
  return { ...object, metadata: { ...object.metadata, resourceVersion: NO_OBJECT_HAS_THIS_VERSION } };
}

/** Whether a create-if-absent apply failed because an object of that name exists. */
export function isNameTaken(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 409;
}
