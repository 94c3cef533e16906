/**
 * Quorum-loss recovery on request (etcd-io/etcd-operator issue 359): which
 * surviving member a cluster that lost its quorum may be rebuilt from, or
 * why the request is refused. Pure: the membership as the members answered,
 * and the user's request (the DistributedKV's recovery annotation, a member
 * pod or `auto`).
 *
 * Without a request nothing is decided: a lost quorum stays hands-off
 * (members that come back restore it, and lose nothing). With one, the
 * source must be the most advanced voting member that answers, by raft
 * term, then raft index: a rebuild from a member that is behind would drop
 * writes another survivor holds. A member that does not answer cannot be
 * judged, so it is never chosen; a learner never votes in the rebuilt
 * cluster's first term, so it is never the source either.
 */
import { hasQuorum, type MemberStatus, type MembershipStatus } from '../membership.js';

/** The request's value that lets the controller choose. */
export const AUTO = 'auto';

export type RecoveryDecision =
  /** Rebuild from this member: the most advanced voting member that answered. */
  | { readonly kind: 'chosen'; readonly pod: string; readonly memberId: string; readonly raftTerm: number; readonly raftIndex: number; readonly revision?: number; readonly message: string }
  /** Nothing is written; the condition and one Event say why. */
  | { readonly kind: 'refused'; readonly message: string };

/** A member's raft position, when it answered its status request. */
interface Position { readonly member: MemberStatus; readonly term: number; readonly index: number }

const answered = (m: MemberStatus): Position | undefined => (m.raftTerm !== undefined && m.raftIndex !== undefined ? { member: m, term: m.raftTerm, index: m.raftIndex } : undefined);

/** Term first (a later term's log supersedes an earlier one's), then index. */
const ahead = (a: Position, b: Position): boolean => a.term > b.term || (a.term === b.term && a.index > b.index);

const named = (m: MemberStatus): string => m.name || m.id;
const describe = (p: Position): string => `${named(p.member)} (term ${p.term}, index ${p.index}${p.member.revision !== undefined ? `, revision ${p.member.revision}` : ''})`;

/**
 * The decision on a recovery request, or undefined without one.
 * `membership` is undefined when no member answered at all.
 */
export function decideRecovery(request: string | undefined, membership: MembershipStatus | undefined): RecoveryDecision | undefined {
  const wanted = request?.trim();
  if (!wanted) return undefined;
  if (!membership) return { kind: 'refused', message: `recovery from ${wanted} refused: no member answers, there is no data to rebuild from (restore the last backup: spec.restore)` };
  if (hasQuorum(membership)) return { kind: 'refused', message: `recovery from ${wanted} refused: the cluster has a quorum (${membership.healthyVoters} of ${membership.voters} voting members healthy); a member that fails is replaced instead` };
  const positions = membership.members.filter((m) => !m.learner).map(answered).filter((p): p is Position => p !== undefined);
  if (positions.length === 0) return { kind: 'refused', message: `recovery from ${wanted} refused: no voting member answers, there is no data to rebuild from (restore the last backup: spec.restore)` };
  const best = positions.reduce((a, b) => (ahead(b, a) ? b : a));
  const chosen = (p: Position): RecoveryDecision => ({
    kind: 'chosen', pod: p.member.name, memberId: p.member.id, raftTerm: p.term, raftIndex: p.index, revision: p.member.revision,
    message: `recovering from ${describe(p)}, the most advanced of the ${positions.length} voting member${positions.length === 1 ? '' : 's'} that answer`,
  });
  if (wanted === AUTO) return chosen(best);
  const member = membership.members.find((m) => m.name === wanted);
  if (!member) return { kind: 'refused', message: `recovery from ${wanted} refused: it is not a member (members: ${membership.members.map(named).join(', ')})` };
  if (member.learner) return { kind: 'refused', message: `recovery from ${wanted} refused: it is a learner, which may lack committed writes; the most advanced voting member that answers is ${describe(best)}` };
  const own = answered(member);
  if (!own) return { kind: 'refused', message: `recovery from ${wanted} refused: it does not answer (${member.problem ?? 'no status'}), so how far it came cannot be judged; the most advanced voting member that answers is ${describe(best)}` };
  const further = positions.filter((p) => ahead(p, own));
  if (further.length > 0) return { kind: 'refused', message: `recovery from ${describe(own)} refused: ${further.map(describe).join(', ')} ${further.length === 1 ? 'is' : 'are'} more advanced; rebuilding from it would drop their writes (name that member, or auto)` };
  return chosen(own);
}
