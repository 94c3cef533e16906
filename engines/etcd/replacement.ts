/**
 * Member replacement (auto-healing), one step per reconcile, decided from
 * what the world shows and nothing remembered (after etcd-druid's single
 * member restoration and etcd-io/etcd-operator issue 333): a voting member
 * whose data cannot come back is removed from the membership, its claim and
 * pod are deleted so the StatefulSet creates both again, and it joins empty
 * as a learner, promoted once caught up (the scale-out path,
 * engines/etcd/scaling.ts, promotes it).
 *
 *   1. mark:        the member's claim is annotated with the member's id: the
 *                   decision, written where the next reconcile reads it;
 *   2. remove:      the marked member leaves the membership (only while it
 *                   is still listed: a resumed step never removes twice);
 *   3. add learner: the same pod, at the same peer URL, is added back as a
 *                   learner (a new member id) while its claim is still marked;
 *   4. delete:      the marked claim, then the pod (uid preconditions), so
 *                   the StatefulSet creates both again, the volume empty, and
 *                   the new pod finds its learner in the membership.
 *
 * A cluster one member short with no marked claim (a member someone removed
 * by hand) gets the add step alone: its pod's volume is taken as it is.
 *
 * What leads to a replacement (a `signal`) and what only to waiting is
 * replacementSignal's to say; docs/auto-healing.md lists both. Gates: one
 * replacement starts at a time, never while a learner or another change is
 * under way, and only when the others hold a quorum without the member. One
 * exception, etcd's own: it adds a member only while its leader is connected
 * to every voting member, so a second member that is due while the first
 * waits to be added back is removed before either is added (each removal,
 * each add and each promotion still one step; never two learners).
 */
import { hasQuorum, type KeyHash, type MemberStatus, type MembershipStatus } from '../membership.js';
import { metaTime } from '../../model/meta-time.js';
import { isOwnMember } from './own-members.js';

/** A member pod as replacement reads it. */
export interface HealingPod {
  readonly name: string;
  readonly uid: string;
  readonly deleting: boolean;
  /** When the pod was created (ms since the epoch). */
  readonly createdAtMs: number;
  /** The scheduler's word when it cannot place the pod (PodScheduled=False, Unschedulable). */
  readonly unschedulable?: string;
  /**
   * The last termination message of the member container, or of an init
   * container when one failed since (a kubelet reports an init container's
   * exit as the pod's latest): with
   * `terminationMessagePolicy: FallbackToLogsOnError`, the tail of the
   * container's log when it exited.
   */
  readonly lastTermination?: string;
  /** When that termination finished (ms since the epoch). */
  readonly lastTerminationAtMs?: number;
  /**
   * The tail of that exited container's own log, as the kubelet keeps it: read when the termination message
   * names no data loss, because a real kubelet's message is the log's last 80 lines or 2,048 bytes, and the
   * stack trace etcd prints after its panic line pushes that line out.
   */
  readonly lastLogTail?: string;
  /** The member container runs now (its state is `running`, not `waiting` or `terminated`). */
  readonly running?: boolean;
}

/** A member's claim as replacement reads it. */
export interface HealingClaim {
  readonly name: string;
  readonly uid: string;
  readonly deleting: boolean;
  /** Pending, Bound or Lost. */
  readonly phase?: string;
  /** The member id the replacement annotation names: this volume's data belongs to a member being replaced. */
  readonly replacing?: string;
}

export interface ReplacementInput {
  /** spec.size */
  readonly size: number;
  /** The live StatefulSet's replicas. */
  readonly replicas: number;
  readonly membership: MembershipStatus;
  /** The pod name of an ordinal, and the peer URL a member of that pod is added with. */
  readonly pod: (ordinal: number) => string;
  readonly peerUrl: (pod: string) => string;
  /** Member pods and claims, by pod name. */
  readonly pods: ReadonlyMap<string, HealingPod>;
  readonly claims: ReadonlyMap<string, HealingClaim>;
  /** Since when each member (by id) has been seen unhealthy, as status last reported it (ms since the epoch). */
  readonly unhealthySince: ReadonlyMap<string, number>;
  readonly now: number;
  /** How long a member may stay unhealthy before it is replaced. */
  readonly unhealthyAfterMs: number;
  /** How long a learner may take to be promoted before it is removed and added again, the first time (learnerCatchUpBoundMs). */
  readonly learnerCatchUpMs: number;
  /** The voting members' hashes of their keys at one revision, read while a CORRUPT alarm stands; absent otherwise. */
  readonly corruptionHashes?: CorruptionHashes;
  /** A pod whose learner was already removed for not catching up, and how many times (status.learnerRetry). */
  readonly learnerRetry?: LearnerRetry;
  /** Another change under way (an upgrade, a storage step, a defragmentation), in words: no replacement starts. */
  readonly otherChange?: string;
}

/** A member pod whose learners were removed for not catching up, and how many times in a row. */
export interface LearnerRetry {
  readonly pod: string;
  readonly attempts: number;
}

/** The most a learner's bound grows to, as a multiple of the first (300 s by default: at most 40 min). */
export const LEARNER_CATCH_UP_CAP = 8;

/**
 * How long the next learner of a pod is given to catch up, after `attempts`
 * learners of it were removed for not catching up: the first bound, doubled
 * for each (capped at LEARNER_CATCH_UP_CAP times). A learner that could not
 * catch up in time once (a large database, a slow volume, a busy leader)
 * would fail again at the same bound and cost the leader a snapshot each
 * time; a longer one lets it finish.
 */
export function learnerCatchUpBoundMs(firstMs: number, attempts: number): number {
  return firstMs * Math.min(2 ** attempts, LEARNER_CATCH_UP_CAP);
}

/**
 * The retry record once this step is made: the step's own when it removes a
 * learner for not catching up; none once the pod's member is promoted (a
 * voting member again); the earlier one otherwise, through the removal, the
 * new claim and the next learner; none either once the cluster's `size` no
 * longer includes the pod (scaled in: a later pod of that ordinal is a new
 * member, owed the first bound).
 */
export function learnerRetryAfter(previous: LearnerRetry | undefined, step: ReplacementStep | undefined, membership: MembershipStatus, size: number): LearnerRetry | undefined {
  if (step?.learnerRetry) return step.learnerRetry;
  if (previous && membership.members.some((m) => m.name === previous.pod && !m.learner)) return undefined;
  if (previous && Number(/-(\d+)$/.exec(previous.pod)?.[1] ?? -1) >= size) return undefined;
  return previous;
}

export type ReplacementAction =
  /** Annotate the claim with the member id: the replacement is decided. */
  | { readonly type: 'mark'; readonly pod: string; readonly claim: { readonly name: string; readonly uid: string }; readonly memberId: string; readonly reason: string }
  | { readonly type: 'remove'; readonly id: string; readonly pod: string }
  /** Delete the marked claim (if not being deleted already), then the pod (if any): the StatefulSet creates both again. */
  | { readonly type: 'deleteVolume'; readonly pod: string; readonly claim?: { readonly name: string; readonly uid: string }; readonly podUid?: string }
  | { readonly type: 'addLearner'; readonly pod: string; readonly peerUrl: string }
  /** A replaced member's learner, caught up, while another replacement is under way. */
  | { readonly type: 'promote'; readonly id: string; readonly pod: string }
  /** A CORRUPT alarm of a member no longer in the membership: it would keep the cluster refusing requests. */
  | { readonly type: 'disarm'; readonly memberId: string };

export interface ReplacementStep {
  readonly action?: ReplacementAction;
  /** Replacing: a replacement is under way (no other change may start); Waiting: a member is unhealthy, not (yet) replaced. */
  readonly phase: 'Replacing' | 'Waiting';
  readonly message: string;
  /** The pod being replaced, for the Events. */
  readonly pod?: string;
  readonly requeueAfterMs: number;
  /**
   * The pods the membership lists once this step is made, when a member is
   * added back (or joins) while another pod has no member: a member that
   * starts empty is told exactly these (etcd refuses to join, "member count
   * is unequal", when its initial cluster names another number of members
   * than the membership has). Absent when every pod has a member.
   */
  readonly joinablePods?: readonly string[];
  /** Waiting on a CORRUPT alarm the members' hashes do not pin on one member: a human decides. */
  readonly corruptionHeld?: true;
  /** Set when the step removes a learner for not catching up: the pod and how many of its learners were, this one included. */
  readonly learnerRetry?: LearnerRetry;
}

const SOON_MS = 2_000;

/** An exit this recent, with the container not running since, is the member's state now (a crash loop's backoff is at most 5 minutes). */
export const RECENT_EXIT_MS = 10 * 60_000;

/** Messages etcd exits with when its data directory cannot serve the member it belongs to. */
const DATA_LOST = [
  /has already been bootstrapped/,
  /tocommit\(\d+\) is out of range/,
  /raft log corrupted, truncated, or lost/,
  /database file .* does not match with snapshot/,
  /failed to find database snapshot file/,
  /wal: crc mismatch/,
  /member count is unequal/,
];

/** The words of `text` (a termination message, a log) that say etcd exited on data it cannot use, if any. */
export function dataLossIn(text: string | undefined): string | undefined {
  if (!text) return undefined;
  for (const pattern of DATA_LOST) {
    const match = text.match(pattern);
    if (match) return match[0];
  }
  return undefined;
}

/**
 * The scheduler's words for a node that cannot reach the pod's bound volume: "node(s) had volume node affinity
 * conflict" (up to Kubernetes 1.3x) and "node(s) didn't match PersistentVolume's node affinity" (1.36).
 */
const VOLUME_PINNED_ELSEWHERE = /^(\d+) node\(s\) (?:had volume node affinity conflict|didn't match PersistentVolume's node affinity)$/;
/** "0/6 nodes are available: 1 node(s) were unschedulable, 5 node(s) had volume node affinity conflict." */
const NODES_AVAILABLE = /(\d+)\/(\d+) nodes are available: ([^.]*)/;

/**
 * Whether the scheduler says that no node that exists can reach the pod's volume: every node it counted has a
 * volume node affinity conflict, so the node (or zone) the volume is pinned to is gone. Had that node been
 * there, merely cordoned (a drain for a kernel upgrade), short of memory or tainted unreachable, the scheduler
 * would count it under that reason instead, and the member is only waited for: the volume may come back with
 * its node, and replacing it would throw away an intact copy for a full resync.
 */
export function volumeNodeGone(message: string): boolean {
  const counted = NODES_AVAILABLE.exec(message);
  if (!counted || Number(counted[1]) !== 0) return false;
  const nodes = Number(counted[2]);
  const conflicting = counted[3].split(',')
    .map((reason) => VOLUME_PINNED_ELSEWHERE.exec(reason.trim()))
    .reduce((sum, match) => sum + (match ? Number(match[1]) : 0), 0);
  return nodes > 0 && conflicting === nodes;
}

export type Signal =
  | { readonly replace: true; readonly reason: string }
  /** `corruption`: a CORRUPT alarm the hashes do not pin on this member: held for a human, the alarm kept. */
  | { readonly replace: false; readonly waiting: string; readonly dueInMs?: number; readonly corruption?: true };

/** What every voting member answered to HashKV at one revision (by member id; a member that did not answer is absent). */
export interface CorruptionHashes {
  readonly revision: number;
  /** How many voting members there are: a majority is of all of them, not of those that answered. */
  readonly voters: number;
  readonly byMember: ReadonlyMap<string, KeyHash>;
}

const hashKey = (h: KeyHash) => `${h.compactRevision}:${h.hash}`;
/** How often a CORRUPT alarm held for a human is judged again (each time every member hashes its key space). */
const CORRUPTION_HELD_LOOK_MS = 60_000;

/**
 * Whether the voters' own hashes pin a CORRUPT alarm on this member: a strict majority of all voting members
 * agrees on one hash, and this member's differs. etcd's check is run by the leader against its own hash, so it
 * cannot tell a corrupt leader from corrupt followers; replacing on its word alone would wipe good members and
 * re-seed them from the bad one. Anything short of a majority against it is held for a human.
 */
export function corruptionVerdict(memberId: string, hashes: CorruptionHashes | undefined): { readonly minority: true; readonly reason: string } | { readonly minority: false; readonly why: string } {
  if (!hashes) return { minority: false, why: 'the voting members\' hashes could not be read' };
  const own = hashes.byMember.get(memberId);
  const counts = new Map<string, number>();
  for (const h of hashes.byMember.values()) counts.set(hashKey(h), (counts.get(hashKey(h)) ?? 0) + 1);
  const [majority, agreeing] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  const told = `${agreeing} of ${hashes.voters} voting members agree on one hash at revision ${hashes.revision}`;
  if (!own) return { minority: false, why: `it did not answer HashKV at revision ${hashes.revision} (${told})` };
  if (agreeing <= hashes.voters / 2) return { minority: false, why: `no majority agrees on the data (${told}): which copy is good cannot be told` };
  if (hashKey(own) === majority) return { minority: false, why: `its hash at revision ${hashes.revision} is the majority's (${told}): the member that raised the alarm may be the corrupt one` };
  return { minority: true, reason: `a CORRUPT alarm, and its hash at revision ${hashes.revision} differs from the one ${agreeing} of ${hashes.voters} voting members agree on` };
}

/**
 * Whether a voting member is to be replaced, and why; or why it is only
 * waited for. Immediate: a CORRUPT alarm, a claim being deleted or Lost, a
 * pod that cannot be scheduled because no node that exists can reach its
 * volume (volumeNodeGone: a cordoned or full node waits), an
 * exit etcd makes only on lost data. After the timeout: any other ill health
 * (a data directory wiped on a pod that reports no termination message, a
 * partition that does not end). A restart, a short network loss, a GC pause
 * end before it.
 */
export function replacementSignal(member: MemberStatus, pod: HealingPod | undefined, claim: HealingClaim | undefined, input: Pick<ReplacementInput, 'unhealthySince' | 'now' | 'unhealthyAfterMs' | 'corruptionHashes'>): Signal | undefined {
  if (member.alarms.includes('CORRUPT')) {
    const verdict = corruptionVerdict(member.id, input.corruptionHashes);
    if (verdict.minority) return { replace: true, reason: verdict.reason };
    // Other signals still count (its claim gone, its node gone): they do not rest on the alarm.
    const other = replacementSignal({ ...member, alarms: member.alarms.filter((a) => a !== 'CORRUPT') }, pod, claim, input);
    if (other?.replace) return other;
    return { replace: false, corruption: true, waiting: `a CORRUPT alarm on ${member.name || member.id} is kept and not acted on: ${verdict.why}; a human decides which member to replace (docs/auto-healing.md: CORRUPT)` };
  }
  if (claim?.deleting) return { replace: true, reason: `its claim ${claim.name} is being deleted` };
  if (claim?.phase === 'Lost') return { replace: true, reason: `its claim ${claim.name} is Lost (its volume is gone)` };
  if (member.healthy) return undefined;
  if (pod?.unschedulable && volumeNodeGone(pod.unschedulable)) {
    return { replace: true, reason: `its pod cannot be scheduled: no node can reach its volume (${pod.unschedulable})` };
  }
  // Only an exit that is the member's state now: not running, and recent. A message kept from an old exit (a
  // learner's first start says "member count is unequal") must not turn later ill health into an immediate replacement.
  const exitNow = pod !== undefined && pod.running !== true && pod.lastTerminationAtMs !== undefined && input.now - pod.lastTerminationAtMs <= RECENT_EXIT_MS;
  const lost = exitNow ? dataLossIn(pod.lastTermination) ?? dataLossIn(pod.lastLogTail) : undefined;
  if (lost) return { replace: true, reason: `etcd exited on data it cannot use (${lost})` };
  const since = input.unhealthySince.get(member.id) ?? input.now;
  const unhealthyMs = input.now - since;
  if (unhealthyMs >= input.unhealthyAfterMs) return { replace: true, reason: `unhealthy for ${Math.round(unhealthyMs / 1000)} s (${member.problem ?? 'unhealthy'}), longer than ${Math.round(input.unhealthyAfterMs / 1000)} s` };
  // Times, not a count of seconds: the condition is written when its words change, and "for 0 s" would stay.
  return {
    replace: false, dueInMs: input.unhealthyAfterMs - unhealthyMs,
    waiting: `${member.name || member.id} unhealthy since ${metaTime(since)} (${member.problem ?? 'unhealthy'}); replaced at ${metaTime(since + input.unhealthyAfterMs)} (after ${Math.round(input.unhealthyAfterMs / 1000)} s) unless it recovers`,
  };
}

function ordinalOf(pod: string): number {
  const match = /-(\d+)$/.exec(pod);
  return match ? Number(match[1]) : Number.MAX_SAFE_INTEGER;
}

/**
 * The one replacement step of this reconcile, or undefined when there is
 * nothing to heal (the scaling step decides then).
 */
export function decideReplacementStep(input: ReplacementInput): ReplacementStep | undefined {
  const podOf = (m: MemberStatus): string | undefined => m.name || [...Array(input.replicas).keys()].map(input.pod).find((p) => m.peerUrls.includes(input.peerUrl(p)));
  const step = decideStep(input, podOf);
  if (step?.phase !== 'Replacing') return step;
  // Only while a member joins (added back now, or a learner not yet promoted) does the list matter.
  const members = input.membership.members;
  const adding = step.action?.type === 'addLearner' ? step.action.pod : undefined;
  if (!adding && !members.some((m) => m.learner)) return step;
  const listed = new Set([...members.map(podOf), adding].filter((p): p is string => p !== undefined));
  const pods = [...Array(input.replicas).keys()].map(input.pod);
  return pods.every((p) => listed.has(p)) ? step : { ...step, joinablePods: pods.filter((p) => listed.has(p)) };
}

function decideStep(input: ReplacementInput, podOf: (m: MemberStatus) => string | undefined): ReplacementStep | undefined {
  const { membership, replicas, size } = input;
  const members = membership.members;
  const ids = new Set(members.map((m) => m.id));
  const ordinals = [...Array(replicas).keys()].map(input.pod);

  // A CORRUPT alarm outlives the member it names: a removed member's alarm is disarmed (the cluster refuses requests while it is armed).
  const stale = membership.alarms.find((a) => a.alarm === 'CORRUPT' && !ids.has(a.memberId));
  if (stale && hasQuorum(membership)) {
    return { action: { type: 'disarm', memberId: stale.memberId }, phase: 'Replacing', message: `disarming the CORRUPT alarm of ${stale.memberId}, a member replaced and no longer in the membership`, requeueAfterMs: SOON_MS };
  }

  // A replacement under way: its marked claim says which member, and the world says how far it came.
  const marked = ordinals
    .map((pod) => ({ pod, claim: input.claims.get(pod) }))
    .filter((c): c is { pod: string; claim: HealingClaim } => c.claim?.replacing !== undefined)
    .sort((a, b) => ordinalOf(a.pod) - ordinalOf(b.pod));
  if (marked.length > 0) {
    // Removals first, one per step: a marked member still listed leaves.
    const listed = marked.find((c) => members.some((m) => m.id === c.claim.replacing));
    if (listed) {
      const { pod } = listed;
      const member = members.find((m) => m.id === listed.claim.replacing)!;
      const rest = members.filter((m) => m !== member && !m.learner);
      const healthyRest = rest.filter((m) => m.healthy).length;
      if (!member.learner && !hasQuorum({ voters: rest.length, healthyVoters: healthyRest })) {
        return { phase: 'Replacing', pod, message: `replacing ${pod}: its removal waits, the others would not hold a quorum without it (${healthyRest} of ${rest.length} healthy)`, requeueAfterMs: 5_000 };
      }
      return { action: { type: 'remove', id: member.id, pod }, phase: 'Replacing', pod, message: `replacing ${pod}: removing member ${member.id} from the membership`, requeueAfterMs: SOON_MS };
    }
    // A learner added back for a marked pod: its old claim and pod go, so it starts empty.
    const joining = marked.find((c) => members.some((m) => m.learner && podOf(m) === c.pod));
    if (joining) {
      const { pod, claim } = joining;
      const livePod = input.pods.get(pod);
      if (!claim.deleting || (livePod && !livePod.deleting)) {
        return {
          action: { type: 'deleteVolume', pod, claim: claim.deleting ? undefined : { name: claim.name, uid: claim.uid }, podUid: livePod && !livePod.deleting ? livePod.uid : undefined },
          phase: 'Replacing', pod, message: `replacing ${pod}: deleting its claim ${claim.name} and its pod so the StatefulSet creates both again, the volume empty`, requeueAfterMs: SOON_MS,
        };
      }
      return { phase: 'Replacing', pod, message: `replacing ${pod}: waiting for its old pod and claim to go`, requeueAfterMs: SOON_MS };
    }
    const { pod } = marked[0];
    // Another replaced member's learner: promoted here (the scaling step, which would promote it, does not run
    // while a claim is marked), once it runs; etcd refuses it until it has caught up.
    const other = members.find((m) => m.learner);
    if (other && !isOwnMember(other, input.pod, input.peerUrl)) {
      // Not one of the pods' (own-members.ts): never promoted; a learner's removal costs no vote.
      return { action: { type: 'remove', id: other.id, pod: other.name || other.id }, phase: 'Replacing', pod, message: `replacing ${pod}: first removing learner ${other.name || other.id} (member ${other.id}, peer URLs ${other.peerUrls.join(', ') || 'none'}), which advertises no pod of this cluster: the controller did not add it`, requeueAfterMs: SOON_MS };
    }
    if (other) {
      if (other.name && other.healthy) return { action: { type: 'promote', id: other.id, pod: other.name }, phase: 'Replacing', pod: other.name, message: `replacing ${other.name}: promoting it to a voting member; ${pod} is added back next`, requeueAfterMs: SOON_MS };
      return { phase: 'Replacing', pod, message: `replacing ${pod}: waiting for the other learner to run and be promoted`, requeueAfterMs: SOON_MS };
    }
    // etcd adds a member, even a learner, only while its leader is connected to every voting member. Another
    // voter that is down blocks the add: when it is due for replacement itself (and the rest hold a quorum
    // without it) it is marked and removed too, each removal a step of its own; otherwise the add waits for it.
    const down = members.filter((m) => !m.learner && !m.healthy);
    if (down.length > 0) {
      const voters = members.filter((m) => !m.learner);
      const due = down
        .map((m) => ({ member: m, pod: podOf(m) }))
        .filter((j): j is { member: MemberStatus; pod: string } => j.pod !== undefined)
        .sort((a, b) => ordinalOf(a.pod) - ordinalOf(b.pod))
        .map((j) => ({ ...j, claim: input.claims.get(j.pod), signal: replacementSignal(j.member, input.pods.get(j.pod), input.claims.get(j.pod), input) }))
        .find((j) => j.signal?.replace && j.claim && hasQuorum({ voters: voters.length - 1, healthyVoters: voters.filter((m) => m.healthy).length }));
      if (due) {
        const reason = (due.signal as Extract<Signal, { replace: true }>).reason;
        return {
          action: { type: 'mark', pod: due.pod, claim: { name: due.claim!.name, uid: due.claim!.uid }, memberId: due.member.id, reason },
          phase: 'Replacing', pod: due.pod, message: `replacing ${due.pod} too: ${reason}; ${pod} cannot be added back while it is a voting member that is down`, requeueAfterMs: SOON_MS,
        };
      }
      return { phase: 'Replacing', pod, message: `replacing ${pod}: adding it back waits, etcd adds a member only while every voting member is connected; down: ${down.map((m) => m.name || m.id).join(', ')}`, requeueAfterMs: 5_000 };
    }
    // Added back before its volume is emptied: the pod the StatefulSet creates then finds itself in the
    // membership when it starts, instead of exiting until a kubelet's backoff lets it try again.
    return { action: { type: 'addLearner', pod, peerUrl: input.peerUrl(pod) }, phase: 'Replacing', pod, message: `replacing ${pod}: adding it back as a learner, to join with an empty volume`, requeueAfterMs: SOON_MS };
  }

  const voters = members.filter((m) => !m.learner);
  const learner = members.find((m) => m.learner);
  if (learner) {
    // A learner that never catches up is replaced like a member: removed, its volume emptied, added again.
    const pod = podOf(learner);
    const started = pod ? input.pods.get(pod)?.createdAtMs : undefined;
    const claim = pod ? input.claims.get(pod) : undefined;
    // Each learner of the same pod removed for it doubles the next one's bound (learnerCatchUpBoundMs).
    const attempts = pod !== undefined && input.learnerRetry?.pod === pod ? input.learnerRetry.attempts : 0;
    const bound = learnerCatchUpBoundMs(input.learnerCatchUpMs, attempts);
    if (pod && claim && !claim.deleting && started !== undefined && input.now - started > bound) {
      const next = Math.round(learnerCatchUpBoundMs(input.learnerCatchUpMs, attempts + 1) / 1000);
      const reason = `a learner not promoted within ${Math.round(bound / 1000)} s (attempt ${attempts + 1}; the next learner gets ${next} s)`;
      return {
        action: { type: 'mark', pod, claim: { name: claim.name, uid: claim.uid }, memberId: learner.id, reason }, phase: 'Replacing', pod, message: `replacing ${pod}: ${reason}`, requeueAfterMs: SOON_MS,
        learnerRetry: { pod, attempts: attempts + 1 },
      };
    }
    return undefined; // the scaling step promotes it
  }

  // One member short of the StatefulSet, and the pod without a member has a new (unmarked) claim: the add step.
  const missing = ordinals.filter((p) => !members.some((m) => m.name === p));
  if (size === replicas && voters.length === replicas - 1 && missing.length === 1) {
    const pod = missing[0];
    const claim = input.claims.get(pod);
    if (!claim || claim.deleting) return { phase: 'Replacing', pod, message: `replacing ${pod}: waiting for the StatefulSet to create its new claim`, requeueAfterMs: SOON_MS };
    return { action: { type: 'addLearner', pod, peerUrl: input.peerUrl(pod) }, phase: 'Replacing', pod, message: `replacing ${pod}: adding it as a learner, to join with an empty volume`, requeueAfterMs: SOON_MS };
  }

  // Start one: the first voter (by ordinal) with a signal, if the gates hold.
  if (voters.length !== replicas || replicas !== size) return undefined;
  const judged = voters
    .map((m) => ({ member: m, pod: podOf(m) }))
    .filter((j): j is { member: MemberStatus; pod: string } => j.pod !== undefined)
    .sort((a, b) => ordinalOf(a.pod) - ordinalOf(b.pod))
    .map((j) => ({ ...j, signal: replacementSignal(j.member, input.pods.get(j.pod), input.claims.get(j.pod), input) }))
    .filter((j) => j.signal !== undefined);
  const due = judged.find((j) => j.signal!.replace);
  if (!due) {
    const waiting = judged.map((j) => j.signal as Extract<Signal, { replace: false }>);
    if (waiting.length === 0) return undefined;
    const next = Math.min(...waiting.map((w) => w.dueInMs ?? 5_000));
    // A held CORRUPT alarm alone waits for a human: each look hashes every member's key space, so not every 5 s.
    const corruptionOnly = waiting.every((w) => w.corruption);
    return {
      phase: 'Waiting', message: waiting.map((w) => w.waiting).join('; '), requeueAfterMs: corruptionOnly ? CORRUPTION_HELD_LOOK_MS : Math.max(1_000, Math.min(5_000, next)),
      ...(waiting.some((w) => w.corruption) ? { corruptionHeld: true as const } : {}),
    };
  }
  const reason = (due.signal as Extract<Signal, { replace: true }>).reason;
  const holdOff = (why: string): ReplacementStep => ({ phase: 'Waiting', pod: due.pod, message: `${due.pod} is to be replaced (${reason}); waits: ${why}`, requeueAfterMs: 5_000 });
  if (input.otherChange) return holdOff(input.otherChange);
  const rest = voters.filter((m) => m !== due.member);
  const healthyRest = rest.filter((m) => m.healthy).length;
  if (!hasQuorum({ voters: rest.length, healthyVoters: healthyRest })) {
    return holdOff(`the others would not hold a quorum without it (${healthyRest} of ${rest.length} healthy)`);
  }
  const claim = input.claims.get(due.pod);
  if (!claim) return holdOff(`its claim does not exist; the StatefulSet creates it with the pod`);
  return {
    action: { type: 'mark', pod: due.pod, claim: { name: claim.name, uid: claim.uid }, memberId: due.member.id, reason },
    phase: 'Replacing', pod: due.pod, message: `replacing ${due.pod}: ${reason}`, requeueAfterMs: SOON_MS,
  };
}
