/**
 * Membership-safe scaling, one step per reconcile (after coreos and
 * etcd-io/etcd-operator, see ../shared/notes/day2-operations.md §5):
 *
 *   scale out: add the next ordinal as a learner, then raise replicas (its
 *              pod joins the existing cluster), then promote it once it runs;
 *   scale in:  move leadership off the highest ordinal if it leads, remove it
 *              from the membership, then lower replicas (its volume is
 *              deleted: a re-grown ordinal joins fresh).
 *
 * Nothing is remembered between steps: the membership itself (what etcd
 * lists) and the StatefulSet's replicas are the record, so a controller that
 * crashes between the membership call and the StatefulSet write finds the
 * half-done step on the next reconcile and finishes it. Every change waits
 * for every voting member to be healthy, so two members are never down at
 * once by the controller's doing, and there is never more than one learner.
 * Without a quorum, nothing changes.
 */
import type { MembershipPlan } from '../engine.js';
import { hasQuorum, notReady, type MemberStatus, type MembershipStatus } from '../membership.js';
import { isOwnMember } from './own-members.js';

/** `Replacing`: a member replacement (replacement.ts) holds the membership; no scaling step runs meanwhile. */
export type ScalingPhase = 'Stable' | 'ScalingOut' | 'ScalingIn' | 'Waiting' | 'Unreachable' | 'QuorumLost' | 'Replacing';

/** The one membership change of this step. */
export type MembershipAction =
  | { readonly type: 'addLearner'; readonly pod: string }
  | { readonly type: 'promote'; readonly id: string; readonly pod: string }
  | { readonly type: 'moveLeader'; readonly fromPod: string; readonly toId: string; readonly toPod: string }
  | { readonly type: 'remove'; readonly id: string; readonly pod: string };

export interface ScalingStep {
  /** What to render when the action (if any) succeeded, or when there is none. */
  readonly plan: MembershipPlan;
  /** What to render when the action failed: nothing moves. */
  readonly planIfActionFails: MembershipPlan;
  readonly action?: MembershipAction;
  readonly phase: ScalingPhase;
  /** In words, naming the gate that holds a change. */
  readonly message: string;
  /** Look again soon: a step is under way, or waiting. */
  readonly requeueAfterMs?: number;
}

export interface ScalingInput {
  /** spec.size */
  readonly size: number;
  /** The live StatefulSet's replicas; undefined when it does not exist yet. */
  readonly replicas?: number;
  /** The live member ConfigMap: the membership the controller last rendered, and whether the cluster had bootstrapped. */
  readonly recorded?: MembershipPlan;
  /** The membership as the store reports it, or why it could not be read. */
  readonly membership: MembershipStatus | { readonly unreachable: string };
  /** The pod name of an ordinal. */
  readonly pod: (ordinal: number) => string;
  /**
   * The StatefulSet controller has caught up: it observed the latest spec and
   * runs exactly `replicas` pods. The next membership change waits for it, so
   * a removed member's pod is gone (and an added one exists) first.
   * @default true
   */
  readonly podsSettled?: boolean;
  /**
   * A pod's peer URL as the controller adds it (undefined when it cannot be told): with it, a member that
   * advertises none of the pods' peer addresses is a stranger (own-members.ts), never promoted and never counted
   * for the StatefulSet's size. @default every member is taken as the cluster's own
   */
  readonly peerUrl?: (pod: string) => string | undefined;
}

const SOON_MS = 2_000;
const WAIT_MS = 5_000;
const BLOCKED_MS = 30_000;
const UNREACHABLE_MS = 15_000;
/**
 * A settled cluster is looked at again this often: a member can fail in ways
 * Kubernetes never reports on an object the controller watches (its process
 * stops while its pod stays Ready, a partition), and status must still tell
 * the truth about the members and the quorum. A look reads the members only:
 * no API request, and no write unless what it sees changed.
 */
const STABLE_LOOK_MS = 30_000;

function ordinalOf(member: MemberStatus): number | undefined {
  const match = /-(\d+)$/.exec(member.name);
  return match ? Number(match[1]) : undefined;
}

function names(members: readonly MemberStatus[]): string {
  return members.map((m) => m.name || `${m.id} (not started)`).join(', ');
}

/**
 * The fewest pods the StatefulSet may run: one past the highest ordinal of
 * any member (a voter or a learner), leaving out one the step's own action
 * removes. The StatefulSet deletes every pod at or above `replicas`, with its
 * claim (whenScaled: Delete), so lowering it below a member's ordinal deletes
 * that member and its data however many members there are.
 */
function replicasFloor(members: readonly MemberStatus[], removedId?: string): number {
  return Math.max(0, ...members.filter((m) => m.id !== removedId).map((m) => (ordinalOf(m) ?? -1) + 1));
}

/** The step with its plans raised to the floor: no step may lower replicas below a member's ordinal. */
function floored(step: ScalingStep, members: readonly MemberStatus[]): ScalingStep {
  const removed = step.action?.type === 'remove' ? step.action.id : undefined;
  const raise = (plan: MembershipPlan, floor: number): MembershipPlan => (plan.replicas >= floor ? plan : { ...plan, replicas: floor });
  return { ...step, plan: raise(step.plan, replicasFloor(members, removed)), planIfActionFails: raise(step.planIfActionFails, replicasFloor(members)) };
}

export function decideScalingStep(input: ScalingInput): ScalingStep {
  if (!('members' in input.membership) || input.replicas === undefined) return decide(input);
  const { peerUrl } = input;
  const own = peerUrl ? input.membership.members.filter((m) => isOwnMember(m, input.pod, peerUrl)) : input.membership.members;
  if (own.length < input.membership.members.length) return strangerStep(input.membership, own, input.replicas);
  return floored(decide(input), own);
}

/**
 * A member that advertises none of the pods' peer addresses (or another pod's name than the one it advertises):
 * the controller did not add it. A learner is removed (a learner holds no vote: its removal never costs the
 * quorum), as the first step, before anything is promoted; a voter is reported and everything else held, for a
 * human (docs/operating.md, "Members the controller does not know"). The StatefulSet keeps its size and a pod
 * for every own member: a stranger's name is not an ordinal to make room for.
 */
function strangerStep(membership: MembershipStatus, own: readonly MemberStatus[], replicas: number): ScalingStep {
  const strangers = membership.members.filter((m) => !own.includes(m));
  const plan: MembershipPlan = { replicas: Math.max(replicas, replicasFloor(own)), state: 'existing' };
  const described = (m: MemberStatus) => `${m.learner ? 'learner' : 'voting member'} ${m.name || m.id} (member ${m.id}, peer URLs ${m.peerUrls.join(', ') || 'none'})`;
  const voter = strangers.find((m) => !m.learner);
  if (voter || !hasQuorum(membership)) {
    const why = voter ? `${described(voter)} advertises no pod of this cluster` : `${described(strangers[0])} advertises no pod of this cluster, and without a quorum it cannot be removed`;
    return { plan, planIfActionFails: plan, phase: 'Waiting', message: `${why}: the controller did not add it; nothing is added, removed or promoted until a human removes it (docs/operating.md, members the controller does not know)`, requeueAfterMs: BLOCKED_MS };
  }
  const learner = strangers[0];
  return {
    plan, planIfActionFails: plan,
    action: { type: 'remove', id: learner.id, pod: learner.name || learner.id },
    phase: 'Waiting',
    message: `removing ${described(learner)}: it advertises no pod of this cluster, so the controller did not add it, and a learner the controller did not add is never promoted`,
    requeueAfterMs: SOON_MS,
  };
}

function decide(input: ScalingInput): ScalingStep {
  const { size, replicas, membership } = input;
  if (replicas === undefined && input.recorded?.state === 'existing') {
    // The cluster exists; its StatefulSet is being replaced (storage growth) with the members it has.
    const plan = input.recorded;
    return { plan, planIfActionFails: plan, phase: 'Stable', message: `the StatefulSet is being created again for ${plan.replicas} existing members` };
  }
  if (replicas === undefined) {
    const plan: MembershipPlan = { replicas: size, state: 'new' };
    return { plan, planIfActionFails: plan, phase: 'Stable', message: `bootstrapping a new cluster of ${size}` };
  }
  if ('unreachable' in membership) {
    // A cluster still starting, or a network the controller cannot cross: keep the membership as last rendered.
    const plan: MembershipPlan = input.recorded ?? { replicas, state: 'new' };
    const waiting = plan.replicas === size ? '' : `; the change to ${size} members waits`;
    // Looked at again after a while, not hot: a member's pod starting or becoming ready wakes the controller anyway.
    return { plan, planIfActionFails: plan, phase: 'Unreachable', message: `no member answered (${membership.unreachable})${waiting}`, requeueAfterMs: UNREACHABLE_MS };
  }

  const members = membership.members;
  const voters = members.filter((m) => !m.learner);
  const hold = (phase: ScalingPhase, message: string, requeueAfterMs: number, count = members.length): ScalingStep => {
    const plan: MembershipPlan = { replicas: count, state: 'existing' };
    return { plan, planIfActionFails: plan, phase, message, requeueAfterMs };
  };

  if (!hasQuorum(membership)) {
    const down = voters.filter((m) => !m.healthy);
    return hold('QuorumLost', `${membership.healthyVoters} of ${membership.voters} voting members healthy, a majority is needed; not reachable or unhealthy: ${down.map((m) => `${m.name || m.id} (${m.problem ?? 'unhealthy'})`).join(', ')}; nothing is changed`, BLOCKED_MS);
  }

  // A learner first: the step that added it is finished before anything else.
  const learner = members.find((m) => m.learner);
  if (learner) {
    const ordinal = ordinalOf(learner) ?? voters.length;
    // Its pod runs (the step that added it may have crashed before raising replicas).
    const running = Math.max(ordinal + 1, members.length);
    if (!learner.name || !learner.healthy) {
      return hold('ScalingOut', `${input.pod(ordinal)} was added as a learner and is starting; it is promoted once it runs`, SOON_MS, running);
    }
    const plan: MembershipPlan = { replicas: running, state: 'existing' };
    return { plan, planIfActionFails: plan, action: { type: 'promote', id: learner.id, pod: learner.name }, phase: 'ScalingOut', message: `promoting ${learner.name} to a voting member`, requeueAfterMs: SOON_MS };
  }

  const count = voters.length;
  // Voters at ordinals with gaps below them (kv-0, kv-3, kv-4: kv-1 and kv-2 removed by hand, or left out by a
  // recovery): the next ordinal is not `count`, and `count` pods would delete voters. Nothing changes until a
  // human re-adds the missing members (or removes the high ones); the floor keeps every voter's pod.
  const voterFloor = replicasFloor(voters);
  const missing = [...Array(voterFloor).keys()].filter((i) => !voters.some((m) => ordinalOf(m) === i)).map(input.pod);
  if (missing.length > 0) {
    return hold('Waiting', `voting members ${names(voters)} leave ${missing.join(', ')} out of the membership: the StatefulSet keeps a pod for every voter `
      + `and no member is added or removed until ${missing.join(', ')} ${missing.length === 1 ? 'is a member' : 'are members'} again (docs/operating.md: gaps in the membership)`, BLOCKED_MS, voterFloor);
  }
  const unhealthy = voters.filter((m) => !m.healthy);
  // One pod per member before anything else: finishes a removal whose replicas were not lowered yet
  // (a crash between the two), and brings back a member's pod that someone scaled away.
  if (replicas !== count) return hold(replicas > count ? 'ScalingIn' : 'ScalingOut', `${count} voting members; the StatefulSet follows with ${count} pods`, SOON_MS, count);
  if (count === size) {
    const plan: MembershipPlan = { replicas: count, state: 'existing' };
    // An unhealthy member is looked at again sooner: its return (or a lost quorum) shows in status within seconds.
    return { plan, planIfActionFails: plan, phase: 'Stable', message: `${count} voting members: ${names(voters)}`, requeueAfterMs: unhealthy.length > 0 ? WAIT_MS : STABLE_LOOK_MS };
  }
  if (input.podsSettled === false) {
    return hold(size > count ? 'ScalingOut' : 'ScalingIn', `the change from ${count} to ${size} members waits for the StatefulSet to run exactly ${count} pods`, SOON_MS, count);
  }
  const unready = notReady(membership);
  if (unready) return hold('Waiting', `the change from ${count} to ${size} members waits for every member to be healthy; ${unready}`, WAIT_MS, count);

  if (size > count) {
    const pod = input.pod(count);
    return {
      plan: { replicas: count + 1, state: 'existing' },
      planIfActionFails: { replicas: count, state: 'existing' },
      action: { type: 'addLearner', pod },
      phase: 'ScalingOut',
      message: `scaling out from ${count} to ${size}: adding ${pod} as a learner`,
      requeueAfterMs: SOON_MS,
    };
  }

  // Scale in: the highest ordinal leaves, never while it leads.
  const top = [...voters].sort((a, b) => (ordinalOf(b) ?? -1) - (ordinalOf(a) ?? -1))[0];
  const same: MembershipPlan = { replicas: count, state: 'existing' };
  if (top.leader) {
    const successor = voters.filter((m) => m !== top).sort((a, b) => (ordinalOf(a) ?? 0) - (ordinalOf(b) ?? 0))[0];
    return {
      plan: same, planIfActionFails: same,
      action: { type: 'moveLeader', fromPod: top.name, toId: successor.id, toPod: successor.name },
      phase: 'ScalingIn',
      message: `scaling in from ${count} to ${size}: moving leadership from ${top.name} to ${successor.name} before ${top.name} leaves`,
      requeueAfterMs: SOON_MS,
    };
  }
  return {
    plan: { replicas: count - 1, state: 'existing' },
    planIfActionFails: same,
    action: { type: 'remove', id: top.id, pod: top.name },
    phase: 'ScalingIn',
    message: `scaling in from ${count} to ${size}: removing ${top.name} from the membership`,
    requeueAfterMs: SOON_MS,
  };
}
