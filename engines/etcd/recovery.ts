/**
 * Quorum-loss recovery on request (etcd-io/etcd-operator issue 359): which
 * surviving member a cluster that lost its quorum may be rebuilt from, or
 * why the request is refused. Pure: the membership as the members answered,
 * and the user's request (the DistributedKV's recovery annotation, a member
 * pod or `auto`).
 *
 * Without a request nothing is decided: a lost quorum stays hands-off
 * (members that come back restore it, and lose nothing). With one, the
 * source must be the most advanced voting member that answers, by the data
 * it applied (its revision), then raft term and index: a rebuild from a
 * member that is behind would drop writes another survivor holds. A member
 * that does not answer cannot be judged, so it is never chosen; a learner
 * never votes in the rebuilt cluster's first term, so it is never the
 * source either.
 *
 * A rebuild while the old majority still serves writes is a split brain, so
 * the quorum must be lost as etcd sees it, not merely as the controller sees
 * it (docs/invariants.md): a member list that answered a linearizable read
 * proves a quorum, and the request is refused; a member that reports a
 * leader, or a loss seen for less than `healing.quorumLossSeconds` or on
 * fewer looks than QUORUM_LOSS_LOOKS, only waits. A refusal is final: the
 * request is consumed (removed with an Event), so a request left from an
 * outage can never fire on a later blip.
 */
import { hasQuorum, type MemberStatus, type MembershipStatus } from '../membership.js';

/** The request's value that lets the controller choose. */
export const AUTO = 'auto';

export type RecoveryDecision =
  /** Rebuild from this member: the most advanced voting member that answered. */
  | { readonly kind: 'chosen'; readonly pod: string; readonly memberId: string; readonly raftTerm: number; readonly raftIndex: number; readonly revision?: number; readonly message: string }
  /** Refused for good: the request is consumed (removed, with one Event), so it can never fire later. */
  | { readonly kind: 'refused'; readonly message: string }
  /** Not yet: the loss is not proven; the request stays and is judged again at the next look. */
  | { readonly kind: 'waiting'; readonly message: string };

/** The fewest looks in a row that must each see the quorum lost, whatever the time: reconciles come in bursts. */
export const QUORUM_LOSS_LOOKS = 3;

/** What the controller itself saw: for how long and on how many looks in a row the quorum was lost with no leader reported. */
export interface QuorumLossSeen {
  readonly forMs: number;
  readonly looks: number;
  /** How long the loss must last (`healing.quorumLossSeconds`). */
  readonly requiredMs: number;
}

/** A member's raft position, when it answered its status request. */
interface Position { readonly member: MemberStatus; readonly term: number; readonly index: number }

const answered = (m: MemberStatus): Position | undefined => (m.raftTerm !== undefined && m.raftIndex !== undefined ? { member: m, term: m.raftTerm, index: m.raftIndex } : undefined);

/**
 * The data a member applied first (its revision: what the rebuild keeps), then raft term (a later term's log
 * supersedes an earlier one's), then raft index.
 */
const ahead = (a: Position, b: Position): boolean => {
  const [ra, rb] = [a.member.revision, b.member.revision];
  if (ra !== undefined && rb !== undefined && ra !== rb) return ra > rb;
  return a.term > b.term || (a.term === b.term && a.index > b.index);
};

const named = (m: MemberStatus): string => m.name || m.id;
const describe = (p: Position): string => `${named(p.member)} (term ${p.term}, index ${p.index}${p.member.revision !== undefined ? `, revision ${p.member.revision}` : ''})`;

/**
 * The decision on a recovery request, or undefined without one.
 * `membership` is undefined when no member answered at all.
 */
export function decideRecovery(request: string | undefined, membership: MembershipStatus | undefined, seen: QuorumLossSeen): RecoveryDecision | undefined {
  const wanted = request?.trim();
  if (!wanted) return undefined;
  if (!membership) return { kind: 'refused', message: `recovery from ${wanted} refused: no member answers, there is no data to rebuild from (restore the last backup: spec.restore)` };
  if (membership.listedLinearizably) {
    return { kind: 'refused', message: `recovery from ${wanted} refused: the member list answered a linearizable read, which a quorum must agree to, so the cluster has its quorum as etcd sees it (the controller reaches ${membership.healthyVoters} of ${membership.voters} voting members); a member that fails is replaced instead` };
  }
  if (hasQuorum(membership)) return { kind: 'refused', message: `recovery from ${wanted} refused: the cluster has a quorum (${membership.healthyVoters} of ${membership.voters} voting members healthy); a member that fails is replaced instead` };
  const leading = membership.members.filter((m) => !m.learner && m.healthy);
  if (leading.length > 0) {
    return { kind: 'waiting', message: `recovery from ${wanted} waits: ${leading.map(named).join(', ')} ${leading.length === 1 ? 'reports' : 'report'} a leader, so a quorum may still hold where the controller cannot reach` };
  }
  if (seen.forMs < seen.requiredMs || seen.looks < QUORUM_LOSS_LOOKS) {
    return { kind: 'waiting', message: `recovery from ${wanted} waits: the quorum has been seen lost for ${Math.round(seen.forMs / 1000)} s on ${seen.looks} look${seen.looks === 1 ? '' : 's'} in a row; it starts once lost for ${Math.round(seen.requiredMs / 1000)} s (healing.quorumLossSeconds) on at least ${QUORUM_LOSS_LOOKS} looks, none reporting a leader` };
  }
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
