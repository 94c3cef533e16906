/**
 * Majority arithmetic of a replicated store, shared by the PodDisruptionBudget
 * the generator writes and the Available condition the controller reports.
 */

/** Members that must be up for the cluster to accept writes. */
export function quorum(size: number): number {
  return Math.floor(size / 2) + 1;
}

/**
 * How many members a voluntary disruption (a node drain, a cluster upgrade)
 * may take down at once: as many as the cluster can lose and keep a quorum,
 * and never fewer than one. A cluster of one or two members has no member to
 * spare; blocking drains forever would only move the outage to whoever has
 * to force the drain, so such a cluster allows one disruption at a time.
 */
export function allowedDisruptions(size: number): number {
  return Math.max(1, size - quorum(size));
}
