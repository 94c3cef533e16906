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
 * may take down at once: one, whatever the size. A budget of everything the
 * quorum can spare (two of five) let two drains run side by side, or a drain
 * beside the controller's own restart of a member, and left a cluster of five
 * one failure from losing its quorum; the controller itself never has more
 * than one member down, and the budget holds everyone else to the same. The
 * budget counts a member the controller is restarting (not Ready) as the one
 * disruption, so a drain waits for it. A cluster of one or two members has
 * no member to spare; blocking drains forever would only move the outage to
 * whoever has to force the drain, so it allows one disruption too.
 */
export const MEMBERS_DISRUPTED_AT_ONCE = 1;

/**
 * Why a size works but deserves a warning, if it does: an even size adds a
 * member to every write's quorum and no tolerated failure; scaling in to one
 * member (`voters`: the voting members now, when known) leaves none to spare.
 * The controller says it in a SizeWarning Event, `dkv validate` on stderr.
 */
export function sizeWarning(size: number, voters: number | undefined): string | undefined {
  if (size === 1 && voters !== undefined && voters > 1) return `scaling in to a single member: from then on one failure loses the cluster's availability, and its data if the volume goes with it`;
  if (size % 2 === 0) return `size ${size} is even: it tolerates ${size / 2 - 1} failure(s), as ${size - 1} members would, and needs more members for every write`;
  return undefined;
}
