/**
 * Quorum-aware rolling restarts onto a new pod template (an upgrade, or new
 * arguments alone) (after ECK's driver/stateful/upgrade.go and
 * the recommendation in ../shared/notes/day2-operations.md §1): the
 * StatefulSet is `OnDelete`, so a new pod template (a new image) changes no
 * pod by itself; each reconcile deletes at most one outdated pod, and only
 *
 *   - when the StatefulSet controller has seen the latest template (its
 *     updateRevision is current) and every ordinal has its pod;
 *   - when every voting member is healthy and a leader is known, so taking
 *     one member down never costs the quorum;
 *   - and the leader last, after leadership was moved to an updated member.
 *
 * An outdated member that is unhealthy goes first and needs only a quorum of
 * the others: that is how reverting a bad image heals the member it broke,
 * without anyone deleting pods by hand. An updated member that never becomes
 * healthy stops the rollout there (the gate names it).
 */
import { hasQuorum, notReady, type MemberStatus, type MembershipStatus } from '../membership.js';

/** One pod of the StatefulSet, as the upgrade reads it. */
export interface MemberPod {
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  /** Its `controller-revision-hash` label: the template revision it runs. */
  readonly revision: string;
  readonly image: string;
  /** Its member container's arguments. */
  readonly args: readonly string[];
  readonly deleting: boolean;
}

export type UpgradeAction =
  /** `change`: what the pod's restart changes, in words (rollChange). */
  | { readonly type: 'deletePod'; readonly pod: MemberPod; readonly reason: string; readonly change: string }
  | { readonly type: 'moveLeader'; readonly fromPod: string; readonly toId: string; readonly toPod: string };

export interface UpgradeStep {
  readonly action?: UpgradeAction;
  /** Outdated pods remain. */
  readonly upgrading: boolean;
  /** In words; when nothing moves, the gate that holds it. */
  readonly message: string;
  /** The image the oldest running revision runs (the lowest version still serving). */
  readonly currentVersion: string;
  readonly targetVersion: string;
  readonly updatedMembers: number;
  readonly requeueAfterMs?: number;
}

export interface UpgradeInput {
  readonly targetImage: string;
  /** The member container's arguments in the latest template. */
  readonly targetArgs: readonly string[];
  readonly replicas: number;
  /** The StatefulSet controller has observed the latest template. */
  readonly statefulSetCurrent: boolean;
  readonly updateRevision: string | undefined;
  readonly pods: readonly MemberPod[];
  readonly membership: MembershipStatus;
}

const SOON_MS = 2_000;

/**
 * What restarting `pod` on the latest template changes, in words: the
 * image, the arguments that differ (a quota raised after the volumes grew,
 * a flag the new etcd version spells otherwise), or both; else another part
 * of the template (resources, a patch). A roll is not always an upgrade, and
 * its messages should not say it is.
 */
export function rollChange(pod: Pick<MemberPod, 'image' | 'args'>, target: { readonly image: string; readonly args: readonly string[] }): string {
  const added = target.args.filter((a) => !pod.args.includes(a));
  const removed = pod.args.filter((a) => !target.args.includes(a));
  const args = added.length > 0 ? `new arguments (${added.join(' ')})` : removed.length > 0 ? `arguments without ${removed.join(' ')}` : undefined;
  const image = pod.image !== target.image ? target.image : undefined;
  if (image && args) return `${image} and ${args}`;
  return image ?? args ?? 'a new pod template (neither its image nor its arguments changed)';
}

export function decideUpgradeStep(input: UpgradeInput): UpgradeStep {
  const { pods, membership, updateRevision, targetImage } = input;
  const change = (pod: MemberPod) => rollChange(pod, { image: targetImage, args: input.targetArgs });
  const outdated = pods.filter((p) => p.revision !== updateRevision);
  const updated = pods.length - outdated.length;
  const currentVersion = outdated.find((p) => p.image !== targetImage)?.image ?? targetImage;
  const base = { currentVersion, targetVersion: targetImage, updatedMembers: updated };
  const hold = (message: string): UpgradeStep => ({ ...base, upgrading: outdated.length > 0, message, requeueAfterMs: SOON_MS });

  // Until then its revisions are last template's: nothing can be said to be up to date.
  if (!input.statefulSetCurrent || updateRevision === undefined) return { ...hold('waiting for the StatefulSet controller to observe the new template'), upgrading: true };
  if (outdated.length === 0) return { ...base, upgrading: false, message: `all ${pods.length} members run ${targetImage}` };
  const restarting = pods.filter((p) => p.deleting);
  if (restarting.length > 0 || pods.length < input.replicas) {
    return hold(`waiting for ${restarting.map((p) => p.name).join(', ') || 'a deleted pod'} to be recreated`);
  }

  const memberOf = (pod: MemberPod): MemberStatus | undefined => membership.members.find((m) => m.name === pod.name);
  const voters = membership.members.filter((m) => !m.learner);
  // An outdated member that is down costs nothing more to replace: first, with a quorum of the others.
  const brokenOutdated = outdated.find((p) => !memberOf(p)?.healthy);
  if (brokenOutdated) {
    if (!hasQuorum(membership)) return hold(`no quorum: ${membership.healthyVoters} of ${membership.voters} voting members healthy`);
    return { ...base, upgrading: true, message: `replacing ${brokenOutdated.name}, which is outdated and unhealthy`, action: { type: 'deletePod', pod: brokenOutdated, reason: 'outdated and unhealthy', change: change(brokenOutdated) }, requeueAfterMs: SOON_MS };
  }
  const unready = notReady(membership);
  if (unready) return hold(`waiting for every member to be healthy before the next restart; ${unready}`);
  if (membership.members.some((m) => m.learner)) return hold('waiting for the learner to be promoted');
  const leader = voters.find((m) => m.leader);
  if (!leader) return hold('waiting for a leader');

  const ordinal = (p: MemberPod) => Number(/-(\d+)$/.exec(p.name)?.[1] ?? 0);
  const followers = outdated.filter((p) => p.name !== leader.name).sort((a, b) => ordinal(b) - ordinal(a));
  if (followers.length > 0) {
    const pod = followers[0];
    return { ...base, upgrading: true, message: `restarting ${pod.name} with ${change(pod)} (${updated} of ${pods.length} updated)`, action: { type: 'deletePod', pod, reason: 'outdated', change: change(pod) }, requeueAfterMs: SOON_MS };
  }
  // Only the leader is left: hand leadership to an updated member first (a single member just restarts).
  const successor = voters.find((m) => m.name !== leader.name);
  const leaderPod = outdated[0];
  if (!successor) {
    return { ...base, upgrading: true, message: `restarting the only member ${leaderPod.name} with ${change(leaderPod)}: a single member is unavailable while it restarts`, action: { type: 'deletePod', pod: leaderPod, reason: 'outdated (single member)', change: change(leaderPod) }, requeueAfterMs: SOON_MS };
  }
  return { ...base, upgrading: true, message: `moving leadership from ${leader.name} to ${successor.name} before restarting it`, action: { type: 'moveLeader', fromPod: leader.name, toId: successor.id, toPod: successor.name }, requeueAfterMs: SOON_MS };
}
