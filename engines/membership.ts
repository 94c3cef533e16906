/**
 * The one interface through which the controller changes a store's
 * membership. Day-2 steps (scale out and in, upgrades) read `status()`, decide
 * one change, make it, and read again on the next reconcile: every method is
 * one request, and nothing here remembers anything between calls.
 */

/** One member as the store sees it, with what the controller needs to decide. */
export interface MemberStatus {
  /** The store's own id for the member. */
  readonly id: string;
  /** The pod it runs as; empty for a member added but never started. */
  readonly name: string;
  readonly peerUrls: readonly string[];
  /** A learner receives the log but does not vote. */
  readonly learner: boolean;
  /** It answered its own status request without errors and knows a leader. */
  readonly healthy: boolean;
  readonly leader: boolean;
  /** The server version it reports, when it answered. */
  readonly version?: string;
  /** Why it is not healthy. */
  readonly problem?: string;
  /**
   * The size of its database file, free pages included (what etcd measures
   * against the quota), and the part in use; when it answered.
   */
  readonly dbSizeBytes?: number;
  readonly dbSizeInUseBytes?: number;
  /** The newest revision it has applied, and its raft position: how far it has come, when it answered. */
  readonly revision?: number;
  readonly raftIndex?: number;
  readonly raftTerm?: number;
  /** The last raft entry it applied to its data (behind raftIndex while it replays its log or takes a snapshot). */
  readonly raftAppliedIndex?: number;
  /**
   * Alarms raised against this member (NOSPACE, CORRUPT). An alarm is not
   * ill health: a member with NOSPACE still answers, knows its leader and
   * serves reads; it is the cluster that refuses writes.
   */
  readonly alarms: readonly MemberAlarm['alarm'][];
}

/** An alarm etcd keeps in its membership until someone disarms it. */
export interface MemberAlarm {
  readonly memberId: string;
  readonly alarm: 'NOSPACE' | 'CORRUPT';
}

export interface MembershipStatus {
  /** Every member of the membership, learners included, by ordinal order of their names. */
  readonly members: readonly MemberStatus[];
  /** Voting members that answered and know a leader; a change needs a majority of voters. */
  readonly healthyVoters: number;
  readonly voters: number;
  readonly leaderId?: string;
  /** Every alarm the cluster holds, as the members listed them (empty when none answered). */
  readonly alarms: readonly MemberAlarm[];
  /**
   * The member list answered a linearizable read: a quorum agreed to it, so the cluster has a quorum
   * as etcd sees it, however few members the controller itself reached. Absent: not known (false).
   */
  readonly listedLinearizably?: boolean;
}

/** A member's hash of its key space at one revision (etcd's HashKV). */
export interface KeyHash {
  readonly hash: number;
  readonly compactRevision: number;
}

export interface Membership {
  /** Reads the membership from any member that answers, and each member's health from itself. Throws when none answers. */
  status(): Promise<MembershipStatus>;
  /** Adds a non-voting member that will run as `name` (its pod) with this peer URL; returns its id. */
  addLearner(peerUrl: string): Promise<string>;
  /**
   * Makes a learner that has caught up a voting member. Like remove, refused
   * (and to be retried on a later reconcile) while the store judges the
   * change unsafe: a learner not yet in sync, or a leader that has not yet
   * heard from enough members since it was elected.
   */
  promote(id: string): Promise<void>;
  remove(id: string): Promise<void>;
  /** Sets a member's peer URLs (what the others dial it at): a migration to TLS switches them to https (etcd/tls-migration.ts). */
  updatePeerUrls(id: string, peerUrls: readonly string[]): Promise<void>;
  /** Hands leadership to `toId`, asking the current leader. */
  moveLeader(toId: string): Promise<void>;
  /**
   * Defragments one member (by its pod name): it rewrites its database
   * without free pages and, meanwhile, serves no request. Maintenance asks one
   * member at a time, never the leader.
   */
  defragment(pod: string): Promise<void>;
  /** Discards every revision older than `revision` (keeping each key's latest), cluster-wide, and waits until it is applied. */
  compact(revision: number): Promise<void>;
  /** Disarms one alarm of one member, cluster-wide. */
  disarm(alarm: MemberAlarm): Promise<void>;
  /**
   * One member's (by pod name) hash of its keys up to `revision`, and the compaction it starts from: two
   * members hold the same data up to `revision` when both agree. A CORRUPT alarm is judged on these
   * (replacement.ts), because the leader that raises it cannot tell its own corruption from a follower's.
   */
  hashKV(pod: string, revision: number): Promise<KeyHash>;
}

/**
 * How many raft entries a healthy member may have left to apply behind the leader's commit index and still
 * count as caught up. A follower under load trails by a handful; one that replays its log after a restart or
 * takes a snapshot trails by thousands, and taking another member down meanwhile could cost the quorum.
 */
export const CAUGHT_UP_ENTRIES = 1000;

/**
 * Why a healthy member is not caught up with its leader (it knows a leader, but has not applied what the
 * leader committed), or undefined when it is, or when either position is unknown.
 */
export function catchingUp(member: MemberStatus, membership: Pick<MembershipStatus, 'members'>): string | undefined {
  const leader = membership.members.find((m) => m.leader);
  if (!leader || leader === member || leader.raftIndex === undefined || member.raftAppliedIndex === undefined) return undefined;
  const behind = leader.raftIndex - member.raftAppliedIndex;
  return behind > CAUGHT_UP_ENTRIES ? `applied ${member.raftAppliedIndex} of the leader's ${leader.raftIndex} entries` : undefined;
}

/**
 * The voting members not ready to carry the quorum through a change, in words ("unhealthy: kv-2 (connection
 * refused); catching up: kv-1 (applied 10 of the leader's 9000 entries)"), or undefined when every one is.
 */
export function notReady(membership: Pick<MembershipStatus, 'members'>): string | undefined {
  const voters = membership.members.filter((m) => !m.learner);
  const named = (m: MemberStatus, problem: string) => `${m.name || m.id} (${problem})`;
  const unhealthy = voters.filter((m) => !m.healthy).map((m) => named(m, m.problem ?? 'unhealthy'));
  const lagging = voters.filter((m) => m.healthy).flatMap((m) => {
    const behind = catchingUp(m, membership);
    return behind ? [named(m, behind)] : [];
  });
  const parts = [unhealthy.length ? `unhealthy: ${unhealthy.join(', ')}` : '', lagging.length ? `catching up: ${lagging.join(', ')}` : ''].filter(Boolean);
  return parts.length ? parts.join('; ') : undefined;
}

/** Whether a majority of voters is healthy: below it, nothing may be changed. */
export function hasQuorum(status: Pick<MembershipStatus, 'healthyVoters' | 'voters'>): boolean {
  return status.voters > 0 && status.healthyVoters > status.voters / 2;
}
