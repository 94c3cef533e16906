/**
 * Which members this controller process itself saw unhealthy at its last
 * look at each cluster. A member's `status.members[].unhealthySince` is the
 * clock of its replacement; status outlives the process that wrote it, so a
 * controller that was down for an hour (or a shard that just took the
 * cluster over) would read an old clock and turn a blip into an immediate
 * replacement. The clock is carried over from status only for a member this
 * process saw unhealthy at its previous look; any other starts again now. A
 * replacement is at most delayed by that; it never comes early.
 */
/** A member as the previous status wrote it: what its replacement clock is carried over from. */
export interface RecordedMember {
  readonly healthy: boolean;
  readonly unhealthySince?: string;
}

/**
 * Each unhealthy member's clock (by status name): the one the previous status
 * wrote, kept only if that status saw it unhealthy too and this process saw it
 * unhealthy at its previous look (`seenBefore`; undefined: a caller that
 * trusts status, as tests do); else now. Pure: docs/invariants.md row 18.
 */
export function unhealthyClocks(unhealthy: readonly string[], before: ReadonlyMap<string, RecordedMember>, seenBefore: ReadonlySet<string> | undefined, now: string): Map<string, string> {
  const clocks = new Map<string, string>();
  for (const name of unhealthy) {
    const earlier = before.get(name);
    const trusted = earlier && !earlier.healthy && earlier.unhealthySince && (!seenBefore || seenBefore.has(name));
    clocks.set(name, trusted ? earlier.unhealthySince! : now);
  }
  return clocks;
}

/** What the healing step asks of the memory (a test hands it one that trusts status). */
export interface UnhealthyLooks {
  previous(uid: string): ReadonlySet<string>;
  remember(uid: string, unhealthy: Iterable<string>): void;
}

export class UnhealthyMemory implements UnhealthyLooks {
  private readonly seen = new Map<string, ReadonlySet<string>>();

  /** The members (by status name) seen unhealthy at the last look at cluster `uid`; empty before the first. */
  previous(uid: string): ReadonlySet<string> {
    return this.seen.get(uid) ?? new Set();
  }

  /** Records this look's unhealthy members of cluster `uid` (a healthy cluster holds no entry: 10,000 of them cost nothing). */
  remember(uid: string, unhealthy: Iterable<string>): void {
    const members = new Set(unhealthy);
    if (members.size === 0) this.seen.delete(uid);
    else this.seen.set(uid, members);
  }

  /** How many clusters the memory holds an entry for. */
  get size(): number {
    return this.seen.size;
  }
}

/** One per controller process: the controller's reconciles of every cluster share it. */
export const unhealthyMemory = new UnhealthyMemory();
