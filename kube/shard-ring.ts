/**
 * Which replica owns a key (a cluster's uid), by rendezvous hashing
 * (highest random weight): every replica computes the same owner from the
 * same set of live replicas, with no coordination. When a replica joins, it
 * takes about 1/n of the keys and only from the others; when one leaves,
 * only its own keys move. Argo CD's consistent hashing with bounded loads
 * and timebertt/kubernetes-controller-sharding's ring solve the same
 * problem; rendezvous hashing needs no virtual nodes for an even spread.

 */
import { createHash } from 'node:crypto';

/** The weight of `member` for `key`: the first 8 bytes of sha256(member NUL key). */
export function weight(member: string, key: string): bigint {
  return createHash('sha256').update(member).update('\0').update(key).digest().readBigUInt64BE(0);
}

/** The member that owns `key` among `members` (undefined when there are none); ties go to the smaller name. */
export function ownerOf(key: string, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1n;
  for (const member of members) {
    const w = weight(member, key);
    if (w > bestWeight || (w === bestWeight && best !== undefined && member < best)) {
      best = member;
      bestWeight = w;
    }
  }
  return best;
}

/** A view of the live members: sorted, with an id every replica computes alike (for the hand-over barrier). */
export interface ShardView {
  readonly members: readonly string[];
  readonly id: string;
}

export function shardView(members: Iterable<string>): ShardView {
  const sorted = [...new Set(members)].sort();
  return { members: sorted, id: createHash('sha256').update(sorted.join('\n')).digest('hex').slice(0, 16) };
}
