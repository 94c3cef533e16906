/**
 * The Day-2 membership step of a reconcile, for engines with a membership
 * (etcd): read the live StatefulSet and member ConfigMap from the cache and
 * the membership from the members, let the engine decide one step
 * (engines/etcd/scaling.ts, pure), make its one membership change, and hand
 * back what to render. Runs before the writes are planned, so the objects
 * written in this reconcile are the step's.
 */
import type { ValidResource } from '../../api/validate.js';
import { engineFor, type MembershipPlan } from '../../engines/index.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { clientUrl, memberName, peerUrl } from '../../engines/etcd/peer-urls.js';
import { decideScalingStep, type MembershipAction, type ScalingPhase } from '../../engines/etcd/scaling.js';
import { decideUpgradeStep, type MemberPod, type UpgradeStep } from '../../engines/etcd/upgrade.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import type { Membership, MembershipStatus, MemberStatus } from '../../engines/membership.js';
import type { CachedObject } from '../../kube/informer.js';
import { clusterIdentity, type ClusterIdentity } from '../../model/cluster-identity.js';
import { sizeWarning } from '../../model/quorum.js';
import { controllingOwner } from '../core/ownership.js';
import type { ReconcileContext } from '../core/reconcile-context.js';
import { readMemberPods } from './member-pods.js';
import type { MemberAddresses } from './member-addresses.js';

export interface MembershipStepResult {
  readonly plan: MembershipPlan;
  readonly phase: ScalingPhase;
  readonly message: string;
  /** The members as last read, when they answered. */
  readonly members?: readonly MemberStatus[];
  /** The change made in this step, in words (for an Event). */
  readonly changed?: string;
  /** Sizes that work but deserve a warning (an Event, once). */
  readonly warning?: string;
  /** A member restarted in this step for an upgrade, in words (for an Event). */
  readonly restarted?: string;
  /** Where a rolling upgrade stands, once membership is stable. */
  readonly upgrade?: Omit<UpgradeStep, 'action' | 'requeueAfterMs'>;
  readonly requeueAfterMs?: number;
}

function describe(action: MembershipAction): string {
  switch (action.type) {
    case 'addLearner': return `added ${action.pod} to the membership as a learner`;
    case 'promote': return `promoted ${action.pod} to a voting member`;
    case 'moveLeader': return `moved leadership from ${action.fromPod} to ${action.toPod}`;
    case 'remove': return `removed ${action.pod} from the membership`;
  }
}

async function perform(membership: Membership, action: MembershipAction, peer: (pod: string) => string): Promise<void> {
  switch (action.type) {
    case 'addLearner': await membership.addLearner(peer(action.pod)); return;
    case 'promote': await membership.promote(action.id); return;
    case 'moveLeader': await membership.moveLeader(action.toId); return;
    case 'remove': await membership.remove(action.id); return;
  }
}

/** The membership the live member ConfigMap records: how many members it lists, and their state. */
function recordedPlan(configMap: CachedObject | undefined): MembershipPlan | undefined {
  const data = configMap?.data as Record<string, string> | undefined;
  if (!data?.ETCD_INITIAL_CLUSTER) return undefined;
  return { replicas: data.ETCD_INITIAL_CLUSTER.split(',').length, state: data.ETCD_INITIAL_CLUSTER_STATE === 'existing' ? 'existing' : 'new' };
}

/**
 * Undefined for engines without a membership: they render `size` members.
 * In detect-only mode the membership is read and reported, never changed.
 */
export async function membershipStep(ctx: ReconcileContext, cr: CachedObject, resource: ValidResource, detectOnly: boolean): Promise<MembershipStepResult | undefined> {
  const { config } = ctx;
  if (!engineFor(config.engine).memberConfig) return undefined;
  const namespace = cr.metadata.namespace!;
  const identity = clusterIdentity(resource.metadata.name, config);
  const ours = (o: CachedObject | undefined) => (o && controllingOwner(o)?.uid === cr.metadata.uid ? o : undefined);
  const statefulSet = ours(ctx.owned.get('apps/v1/StatefulSet')?.get(`${namespace}/${identity.statefulSetName}`));
  const configMap = ours(ctx.owned.get('v1/ConfigMap')?.get(`${namespace}/${identity.memberConfigName}`));
  const replicas = statefulSet ? (statefulSet.spec?.replicas as number | undefined) ?? 1 : undefined;

  const addresses: MemberAddresses = ctx.memberAddresses ?? { client: (ns, p, id) => clientUrl(id, p, ns, config), peer: (_ns, p, id) => peerUrl(id, p, config) };
  const endpoint = (pod: string) => addresses.client(namespace, pod, identity);
  const pods = () => Array.from({ length: Math.max(replicas ?? 0, 1) }, (_, i) => memberName(identity, i));
  const membership = new EtcdMembership(pods, endpoint, ctx.memberTimeoutMs, ctx.term);
  const status = replicas === undefined ? { unreachable: 'not created' } : await membership.status().catch((e: Error) => ({ unreachable: e.message }));
  const stsStatus = statefulSet?.status as { observedGeneration?: number; replicas?: number } | undefined;
  const podsSettled = statefulSet !== undefined && (stsStatus?.observedGeneration ?? 0) >= (statefulSet.metadata.generation ?? 0) && stsStatus?.replicas === replicas;
  const step = decideScalingStep({ size: resource.spec.size, replicas, recorded: recordedPlan(configMap), membership: status, pod: (i) => memberName(identity, i), podsSettled });
  const members = 'members' in status ? status.members : undefined;
  const warning = sizeWarning(resource.spec.size, members?.filter((m) => !m.learner).length);
  if (!step.action || detectOnly) {
    const plan = detectOnly ? recordedPlan(configMap) ?? step.planIfActionFails : step.plan;
    const result: MembershipStepResult = { plan, phase: step.phase, message: step.message, members, warning, requeueAfterMs: step.requeueAfterMs };
    // One change at a time: members are restarted for an upgrade only while the membership is stable.
    if (step.phase !== 'Stable' || !statefulSet || !('members' in status)) return result;
    return upgradeStep(ctx, cr, resource, identity, statefulSet, status, membership, detectOnly, result);
  }
  try {
    await perform(membership, step.action, (pod) => addresses.peer(namespace, pod, identity));
  } catch (e) {
    // etcd refuses a change it judges unsafe now (a learner not caught up, a leader that has not heard from enough members): look again soon.
    ctx.log.warn('membership change refused or failed', { key: `${namespace}/${cr.metadata.name}`, action: step.action.type, error: (e as Error).message });
    return { plan: step.planIfActionFails, phase: step.phase, message: `${step.message}: not yet (${(e as Error).message})`, members, warning, requeueAfterMs: step.requeueAfterMs };
  }
  ctx.log.info('membership changed', { key: `${namespace}/${cr.metadata.name}`, change: describe(step.action) });
  return { plan: step.plan, phase: step.phase, message: step.message, members, changed: describe(step.action), warning, requeueAfterMs: step.requeueAfterMs };
}

/** The image the live StatefulSet's pod template runs (its member container's). */
export function templateImage(statefulSet: CachedObject): string | undefined {
  return (statefulSet.spec as { template?: { spec?: { containers?: { image?: string }[] } } } | undefined)?.template?.spec?.containers?.[0]?.image;
}

/** The pods of the StatefulSet, read from the API server (fresh), only while some may be outdated. */
export async function memberPods(client: KubeClient, namespace: string, identity: ClusterIdentity): Promise<MemberPod[]> {
  return (await readMemberPods(client, namespace, identity.selector, identity.statefulSetName))
    .map((p) => ({
      name: p.metadata.name,
      uid: p.metadata.uid!,
      resourceVersion: p.metadata.resourceVersion!,
      revision: p.metadata.labels?.['controller-revision-hash'] ?? '',
      image: p.spec?.containers?.[0]?.image ?? '',
      deleting: Boolean(p.metadata.deletionTimestamp),
    }));
}

async function upgradeStep(
  ctx: ReconcileContext, cr: CachedObject, resource: ValidResource, identity: ClusterIdentity, statefulSet: CachedObject,
  status: MembershipStatus, membership: Membership, detectOnly: boolean, result: MembershipStepResult,
): Promise<MembershipStepResult> {
  const namespace = cr.metadata.namespace!;
  const sts = statefulSet as CachedObject & { spec?: { replicas?: number }; status?: { observedGeneration?: number; updateRevision?: string; currentRevision?: string; updatedReplicas?: number } };
  const replicas = sts.spec?.replicas ?? 1;
  // The live template may still be the old one: this reconcile applies the new one after this step.
  const liveImage = templateImage(sts);
  if (liveImage !== resource.spec.image) {
    const upgrade = { upgrading: true, message: `applying the new pod template (${resource.spec.image})`, currentVersion: liveImage ?? resource.spec.image, targetVersion: resource.spec.image, updatedMembers: 0 };
    return { ...result, upgrade, requeueAfterMs: Math.min(result.requeueAfterMs ?? 2_000, 2_000) };
  }
  const statefulSetCurrent = (sts.status?.observedGeneration ?? 0) >= (sts.metadata.generation ?? 0);
  const settled = statefulSetCurrent && sts.status?.updateRevision === sts.status?.currentRevision && (sts.status?.updatedReplicas ?? 0) >= replicas;
  if (settled) {
    const upgrade = { upgrading: false, message: `all ${replicas} members run ${resource.spec.image}`, currentVersion: resource.spec.image, targetVersion: resource.spec.image, updatedMembers: replicas };
    return { ...result, upgrade };
  }
  const step = decideUpgradeStep({
    targetImage: resource.spec.image, replicas, statefulSetCurrent, updateRevision: sts.status?.updateRevision,
    pods: await memberPods(ctx.client, namespace, identity), membership: status,
  });
  const { action, requeueAfterMs, ...upgrade } = step;
  const next: MembershipStepResult = { ...result, upgrade, requeueAfterMs: Math.min(result.requeueAfterMs ?? Infinity, requeueAfterMs ?? Infinity) };
  if (next.requeueAfterMs === Infinity) delete (next as { requeueAfterMs?: number }).requeueAfterMs;
  if (!action || detectOnly) return next;
  const key = `${namespace}/${cr.metadata.name}`;
  try {
    if (action.type === 'moveLeader') {
      await membership.moveLeader(action.toId);
      ctx.log.info('membership changed', { key, change: `moved leadership from ${action.fromPod} to ${action.toPod}` });
      return { ...next, changed: `moved leadership from ${action.fromPod} to ${action.toPod} before restarting it` };
    }
    // Preconditions: the pod that was judged, not a successor of the same name.
    await ctx.client.request('DELETE', resourcePath('v1', 'Pod', namespace, action.pod.name), {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: action.pod.uid, resourceVersion: action.pod.resourceVersion } },
    });
    ctx.log.info('member restarted for an upgrade', { key, pod: action.pod.name, reason: action.reason, image: resource.spec.image });
    return { ...next, restarted: `restarted ${action.pod.name} (${action.reason}) to run ${resource.spec.image}` };
  } catch (e) {
    ctx.log.warn('upgrade step refused or failed', { key, action: action.type, error: (e as Error).message });
    return { ...next, upgrade: { ...upgrade, message: `${upgrade.message}: not yet (${(e as Error).message})` } };
  }
}
