/**
 * The Day-2 membership step of a reconcile, for engines with a membership
 * (etcd): read the live StatefulSet and member ConfigMap from the cache and
 * the membership from the members, let the engine decide one step
 * (engines/etcd/scaling.ts, pure) or, once membership is stable, one step
 * of a rolling upgrade (engines/etcd/upgrade.ts, pure), and hand back what
 * to render and the one change to make, which the core makes
 * (core/execute-writes.ts). Runs before the writes are planned, so the
 * objects written in this reconcile are the step's.
 */
import type { ValidResource } from '../../api/validate.js';
import { engineFor, type MembershipPlan } from '../../engines/index.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { clientUrl, memberName, peerUrl } from '../../engines/etcd/peer-urls.js';
import { decideScalingStep, type MembershipAction, type ScalingPhase } from '../../engines/etcd/scaling.js';
import { decideUpgradeStep, type MemberPod, type UpgradeStep } from '../../engines/etcd/upgrade.js';
import { gateSwitchingRestart, templateTls } from '../../engines/etcd/tls-migration.js';
import type { KubeClient } from '../../kube/client.js';
import { hasQuorum, type Membership, type MembershipStatus, type MemberStatus } from '../../engines/membership.js';
import type { ReplacementAction } from '../../engines/etcd/replacement.js';
import { recoveryReader, recoveryStep, type RecoveryEvent, type RecoveryReader } from './recovery-step.js';
import { quorumLossClock, type QuorumLossLooks } from './quorum-loss-clock.js';
import { unhealthyMemory, type UnhealthyLooks } from './unhealthy-memory.js';
import { quorumShows, type RebuildAction } from '../../engines/etcd/rebuild.js';
import type { CachedObject } from '../../kube/informer.js';
import { clusterIdentity, type ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { sizeWarning } from '../../model/quorum.js';
import { readMemberPods } from './member-pods.js';
import { describeReplacementAction, healingReader, healingStep, type HealingReader, type HealingReport } from './member-replacement.js';
import type { LearnerRetry } from '../../engines/etcd/replacement.js';
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import { quantityValue } from '../../model/quantity.js';
import type { MemberAddresses } from './member-addresses.js';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { PLAIN, type TlsInEffect } from '../../model/tls.js';

export interface MembershipStepResult {
  readonly plan: MembershipPlan;
  readonly phase: ScalingPhase;
  readonly message: string;
  /** The members as last read, when they answered. */
  readonly members?: readonly MemberStatus[];
  /** The whole membership as last read (alarms, leader), when it answered, and the client it was read with: the maintenance step (maintenance-step.ts) reads no second time. */
  readonly membership?: { readonly status: MembershipStatus; readonly via: Membership };
  /** The change made in this step, in words (for an Event). */
  readonly changed?: string;
  /** Sizes that work but deserve a warning (an Event, once). */
  readonly warning?: string;
  /** A member restarted in this step for an upgrade, in words (for an Event). */
  readonly restarted?: string;
  /** Where a rolling upgrade stands, once membership is stable. */
  readonly upgrade?: Omit<UpgradeStep, 'action' | 'requeueAfterMs'>;
  /** The Healing condition (member replacement, member-replacement.ts). */
  readonly healing?: HealingReport;
  /** Since when each unhealthy member (by its status name) has been unhealthy: the clock of its replacement. */
  readonly unhealthySince?: ReadonlyMap<string, string>;
  /** The learner retry record for status (member-replacement.ts); the earlier one, kept, while healing does not run. */
  readonly learnerRetry?: LearnerRetry;
  /** A replacement decided (MemberReplacing) or finished (MemberReplaced) in this step, for an Event. */
  readonly healingEvent?: { readonly reason: 'MemberReplacing' | 'MemberReplaced'; readonly message: string };
  /** A quorum-loss recovery's Event (recovery-step.ts): a refusal once per message, a start or an end once. */
  readonly recoveryEvent?: RecoveryEvent;
  readonly requeueAfterMs?: number;
}

/** A membership change, in words (for an Event and the log). */
export function describeMembershipAction(action: MembershipAction): string {
  switch (action.type) {
    case 'addLearner': return `added ${action.pod} to the membership as a learner`;
    case 'promote': return `promoted ${action.pod} to a voting member`;
    case 'moveLeader': return `moved leadership from ${action.fromPod} to ${action.toPod}`;
    case 'remove': return `removed ${action.pod} from the membership`;
  }
}

/**
 * The membership the live member ConfigMap records: the members it lists, and their state. A list with a gap
 * (a replacement adding a member back while another pod has none) still records the pods up to its last.
 */
export function recordedPlan(configMap: CachedObject | undefined): MembershipPlan | undefined {
  const data = configMap?.data as Record<string, string> | undefined;
  if (!data?.ETCD_INITIAL_CLUSTER) return undefined;
  const state = data.ETCD_INITIAL_CLUSTER_STATE === 'existing' ? 'existing' : 'new';
  const entries = data.ETCD_INITIAL_CLUSTER.split(',');
  const ordinals = entries.map((e) => /-(\d+)=/.exec(e)?.[1]).map(Number);
  if (ordinals.some((o) => !Number.isInteger(o)) || ordinals.every((o, i) => o === i)) return { replicas: entries.length, state };
  return { replicas: Math.max(...ordinals) + 1, state, members: ordinals };
}

/** The one change a membership step asks for, made by the core (core/execute-writes.ts). */
export type MemberWrite =
  /** A membership change (add a learner at `peerUrl`, promote, move the leader, remove), through the client the members were read with. */
  | { readonly kind: 'membership'; readonly action: MembershipAction; readonly peerUrl: string; readonly via: Membership }
  /** Leadership moves off a member before the upgrade restarts it. */
  | { readonly kind: 'moveLeader'; readonly toId: string; readonly fromPod: string; readonly toPod: string; readonly via: Membership }
  /** A member's peer URLs switched to https just before its restart (a migration to TLS, engines/etcd/tls-migration.ts). */
  | { readonly kind: 'updatePeerUrls'; readonly id: string; readonly pod: string; readonly peerUrls: readonly string[]; readonly via: Membership }
  /** A member restarts onto the new pod template: the pod that was judged is deleted (uid and resourceVersion preconditions). */
  | { readonly kind: 'restartMember'; readonly namespace: string; readonly pod: MemberPod; readonly reason: string; readonly change: string }
  /** One step of a member replacement (engines/etcd/replacement.ts): mark its claim, remove it, delete its claim and pod, add it back, disarm. */
  | { readonly kind: 'healing'; readonly namespace: string; readonly action: ReplacementAction; readonly annotation: string; readonly via: Membership }
  /** One step of a quorum-loss recovery (engines/etcd/rebuild.ts): record it, mark a claim, restart the source, finish. */
  | {
    readonly kind: 'recovery'; readonly namespace: string; readonly identity: ClusterIdentity; readonly action: RebuildAction; readonly annotation: string; readonly recoveryAnnotation: string; readonly cluster: string;
    /** The members, asked once more immediately before the source restarts (quorumShows: the recovery is abandoned then). */
    readonly via: Membership;
  };

/** What the membership step decided: what to render and report, and the change to make for it. */
export interface MembershipDecision {
  /** What this reconcile renders and reports once the write is made (or when there is none). */
  readonly result: MembershipStepResult;
  readonly write?: MemberWrite;
  /** What it renders and reports instead when the write fails (its message gains why: membershipNotYet). */
  readonly ifWriteFails?: MembershipStepResult;
}

/** What the step reads: the cluster's own objects from the cache, the members, and (fresh) the member pods. */
export interface MembershipReader {
  readonly config: GeneratorConfig;
  /** The cluster's own StatefulSet and member ConfigMap (controlled by it), from the cache. */
  readonly statefulSet?: CachedObject;
  readonly configMap?: CachedObject;
  readonly addresses?: MemberAddresses;
  /** The TLS the members run (model/tls.ts): the schemes of their URLs. @default plain HTTP */
  readonly tls?: TlsInEffect;
  /** A client of the members that may exist (`pods`), each reached at `endpoint`. */
  members(pods: () => readonly string[], endpoint: (pod: string) => string): Membership;
  /** The StatefulSet's pods, read fresh. */
  memberPods(namespace: string, identity: ClusterIdentity): Promise<MemberPod[]>;
  /** Member pods and claims as replacement reads them, fresh. */
  readonly healing: HealingReader;
  /** The recovery ConfigMap, fresh: read only while a recovery is asked for or under way. */
  readonly recovery: RecoveryReader;
  /** What this controller has seen of each cluster's quorum loss, across looks. */
  readonly quorumLoss: QuorumLossLooks;
  /** Which members this controller saw unhealthy at its last look (the replacement clock's trust). */
  readonly unhealthy: UnhealthyLooks;
  readonly now: () => number;
}

/**
 * The result to report when the step's write failed: etcd refuses a change it
 * judges unsafe now (a learner not caught up, a leader that has not heard
 * from enough members), so it is looked at again soon.
 */
export function membershipNotYet(decision: MembershipDecision, error: string): MembershipStepResult {
  const failed = decision.ifWriteFails ?? decision.result;
  if (decision.write?.kind === 'membership' || decision.write?.kind === 'healing' || decision.write?.kind === 'recovery') return { ...failed, message: `${failed.message}: not yet (${error})` };
  return { ...failed, upgrade: failed.upgrade && { ...failed.upgrade, message: `${failed.upgrade.message}: not yet (${error})` } };
}

/**
 * Undefined for engines without a membership: they render `size` members.
 * In detect-only mode the membership is read and reported, never changed.
 */
export async function membershipStep(read: MembershipReader, cr: CachedObject, resource: ValidResource, detectOnly: boolean): Promise<MembershipDecision | undefined> {
  const { config, statefulSet, configMap } = read;
  if (!engineFor(config.engine).memberConfig) return undefined;
  const namespace = cr.metadata.namespace!;
  const identity = clusterIdentity(resource.metadata.name, config);
  const replicas = statefulSet ? (statefulSet.spec?.replicas as number | undefined) ?? 1 : undefined;

  const tls = read.tls ?? PLAIN;
  // Given addresses (tests' loopback ports) take the scheme the members serve now: it changes while a cluster moves to TLS.
  const given = read.addresses;
  const addresses: MemberAddresses = given
    ? { client: (ns, p, id) => withScheme(given.client(ns, p, id), tls.client), peer: (ns, p, id) => withScheme(given.peer(ns, p, id), tls.peer) }
    : { client: (ns, p, id) => clientUrl(id, p, ns, config, tls.client), peer: (_ns, p, id) => peerUrl(id, p, config, tls.peer) };
  const endpoint = (pod: string) => addresses.client(namespace, pod, identity);
  const ordinals = () => Array.from({ length: Math.max(replicas ?? 0, 1) }, (_, i) => memberName(identity, i));
  // A quorum-loss recovery: its record (the recovery ConfigMap) is read only while one is asked for, or was under way
  // when status was last written (a controller killed between removing the request and deleting the record finishes).
  const request = cr.metadata.annotations?.[config.healing.recoveryAnnotation]?.trim() || undefined;
  const previousHealing = (cr.status as DistributedKVStatus | undefined)?.conditions?.find((c) => c.type === 'Healing');
  const record = statefulSet && (request || previousHealing?.reason === 'Recovering') ? await read.recovery.record(namespace, identity) : undefined;
  // The rebuilt member is asked first: an old member that still runs would list the old membership.
  const pods = () => (record ? [record.pod, ...ordinals().filter((p) => p !== record.pod)] : ordinals());
  const membership = read.members(pods, endpoint);
  const status = replicas === undefined ? { unreachable: 'not created' } : await membership.status().catch((e: Error) => ({ unreachable: e.message }));
  const stsStatus = statefulSet?.status as { observedGeneration?: number; replicas?: number } | undefined;
  const podsSettled = statefulSet !== undefined && (stsStatus?.observedGeneration ?? 0) >= (statefulSet.metadata.generation ?? 0) && stsStatus?.replicas === replicas;
  const step = decideScalingStep({
    size: resource.spec.size, replicas, recorded: recordedPlan(configMap), membership: status, pod: (i) => memberName(identity, i), podsSettled,
    peerUrl: (pod) => addresses.peer(namespace, pod, identity),
  });
  const members = 'members' in status ? status.members : undefined;
  const answered = 'members' in status ? { status, via: membership } : undefined;
  const warning = sizeWarning(resource.spec.size, members?.filter((m) => !m.learner).length);

  // A recovery request is judged on every look (one made while the quorum holds is refused and removed), and a
  // recovery carried on while its record exists. Every look also runs the clock the loss must stay on for.
  const quorum = 'members' in status && hasQuorum(status);
  const answeredStatus = 'members' in status ? status : undefined;
  // The key of this cluster in the process's memories (quorum-loss-clock.ts, unhealthy-memory.ts).
  const clusterKey = cr.metadata.uid ?? `${namespace}/${resource.metadata.name}`;
  const quorumLoss = read.quorumLoss.look(clusterKey, answeredStatus !== undefined && !quorumShows(answeredStatus), read.now(), config.healing.quorumLossSeconds * 1000);
  const recovery = statefulSet && replicas !== undefined && (record || request)
    ? await (async () => {
      const [livePods, claims] = await Promise.all([read.healing.pods(namespace, identity), read.healing.claims(namespace, identity, config.healing.replacementAnnotation)]);
      return recoveryStep({ request, record, membership: answeredStatus, size: resource.spec.size, pods: ordinals(), livePods, claims, now: read.now(), quorumLoss });
    })()
    : undefined;
  if (recovery && !recovery.replacing) {
    const plan = recordedPlan(configMap) ?? step.plan;
    const result: MembershipStepResult = {
      plan, phase: step.phase, message: step.message, members, membership: answered, warning, healing: recovery.report,
      recoveryEvent: recovery.event, requeueAfterMs: recovery.requeueAfterMs ?? step.requeueAfterMs,
    };
    if (!recovery.action || detectOnly) return { result: { ...result, recoveryEvent: recovery.event?.reason === 'RecoveryRefused' ? recovery.event : undefined } };
    return {
      result,
      write: { kind: 'recovery', namespace, identity, action: recovery.action, annotation: config.healing.replacementAnnotation, recoveryAnnotation: config.healing.recoveryAnnotation, cluster: resource.metadata.name, via: membership },
      ifWriteFails: { ...result, recoveryEvent: undefined },
    };
  }

  // Healing first: a replacement under way holds the StatefulSet at its size and every other change.
  const healing = 'members' in status && statefulSet && replicas !== undefined && quorum
    ? await healingStep(read.healing, {
      config, namespace, identity, size: resource.spec.size, replicas, membership: status, previous: cr.status as DistributedKVStatus | undefined,
      pod: (i) => memberName(identity, i), peerUrl: (pod) => addresses.peer(namespace, pod, identity), now: read.now(),
      otherChange: otherChange(statefulSet, resource, podsSettled) ?? defragmentationUnderWay(cr.status as DistributedKVStatus | undefined),
      hashKV: (pod, revision) => membership.hashKV(pod, revision),
      seen: { memory: read.unhealthy, uid: clusterKey },
    })
    : undefined;
  // A recovery whose rebuilt member holds a quorum: the replacement's steps bring the others back, reported as the recovery's.
  const report = healing && recovery?.replacing
    ? { status: 'True' as const, reason: 'Recovering' as const, message: healing.step?.phase === 'Replacing' ? `${recovery.replacing}; ${healing.step.message}` : recovery.replacing }
    : healing?.report;
  const learnerRetry = healing ? healing.learnerRetry : (cr.status as DistributedKVStatus | undefined)?.learnerRetry;
  // A refused request was removed with its refusal: the refusal stays in the Healing condition until healing says more.
  const refusal = !healing && previousHealing?.reason === 'RecoveryRefused' ? { healing: { status: 'False' as const, reason: 'RecoveryRefused' as const, message: previousHealing.message } } : {};
  const healed = { ...(healing ? { healing: report!, unhealthySince: healing.unhealthySince } : refusal), learnerRetry };
  if (healing?.step?.phase === 'Replacing' && replicas !== undefined) {
    const joinable = healing.step.joinablePods?.map((p) => Number(/-(\d+)$/.exec(p)![1]));
    const plan: MembershipPlan = joinable ? { replicas, state: 'existing', members: joinable } : { replicas, state: 'existing' };
    const result: MembershipStepResult = { plan, phase: 'Replacing', message: healing.step.message, members, warning, requeueAfterMs: healing.step.requeueAfterMs, ...healed };
    const { action } = healing.step;
    if (!action || detectOnly) return { result };
    return {
      result: { ...result, changed: describeReplacementAction(action), healingEvent: healing.event },
      write: { kind: 'healing', namespace, action, annotation: config.healing.replacementAnnotation, via: membership },
      // Not removed after all: the record stays as it was.
      ifWriteFails: { ...result, learnerRetry: (cr.status as DistributedKVStatus | undefined)?.learnerRetry },
    };
  }
  const healingRequeue = healing?.step?.requeueAfterMs;
  const soonest = (ms: number | undefined) => (healingRequeue === undefined ? ms : Math.min(ms ?? Infinity, healingRequeue));
  if (!step.action || detectOnly) {
    const plan = detectOnly ? recordedPlan(configMap) ?? step.planIfActionFails : step.plan;
    const result: MembershipStepResult = { plan, phase: step.phase, message: step.message, members, membership: answered, warning, requeueAfterMs: soonest(step.requeueAfterMs), ...healed };
    // One change at a time: members are restarted for an upgrade only while the membership is stable.
    if (step.phase !== 'Stable' || !statefulSet || !('members' in status)) return { result };
    return upgradeStep(read, cr, resource, identity, statefulSet, status, membership, detectOnly, result);
  }
  const peer = step.action.type === 'addLearner' ? addresses.peer(namespace, step.action.pod, identity) : '';
  // The promotion of a replaced member's learner ends its replacement.
  const replaced = step.action.type === 'promote' && healing?.report.reason === 'Replacing'
    ? { reason: 'MemberReplaced' as const, message: `${step.action.pod} replaced: it joined with an empty volume, caught up and votes again` }
    : undefined;
  return {
    result: {
      plan: step.plan, phase: step.phase, message: step.message, members, membership: answered, changed: describeMembershipAction(step.action), warning,
      requeueAfterMs: soonest(step.requeueAfterMs), ...healed, healingEvent: replaced,
    },
    write: { kind: 'membership', action: step.action, peerUrl: peer, via: membership },
    ifWriteFails: { plan: step.planIfActionFails, phase: step.phase, message: step.message, members, membership: answered, warning, requeueAfterMs: soonest(step.requeueAfterMs), ...healed },
  };
}

const withScheme = (url: string, secure: boolean): string => url.replace(/^https?:/, secure ? 'https:' : 'http:');

/** Another change under way that a replacement must not start during, in words. */
function otherChange(statefulSet: CachedObject, resource: ValidResource, podsSettled: boolean): string | undefined {
  if (!podsSettled) return 'the StatefulSet has not caught up with its pods yet';
  const sts = statefulSet as CachedObject & { status?: { updateRevision?: string; currentRevision?: string } };
  if (templateImage(statefulSet) !== resource.spec.image || sts.status?.updateRevision !== sts.status?.currentRevision) return 'a rolling upgrade is under way';
  const template = (statefulSet.spec as { volumeClaimTemplates?: { spec?: { resources?: { requests?: { storage?: string } } } }[] } | undefined)?.volumeClaimTemplates?.[0];
  const live = template?.spec?.resources?.requests?.storage;
  const wanted = resource.spec.storage?.size ?? '10Gi';
  if (live && quantityValue(live) !== quantityValue(wanted)) return 'the members\' volumes are growing';
  return undefined;
}

/**
 * A defragmentation the last status says is under way (its Maintenance condition True, Defragmenting or
 * Recovering from NOSPACE), in words. Within one process a defragmentation never overlaps this step (the call
 * is made and awaited in one reconcile of the cluster); after a restart, the member the old process asked may
 * still be rewriting its file, answering nothing, and must not count as a member to replace, nor its absence as
 * room to replace another. The maintenance step of the same reconcile writes the condition afresh, so a
 * condition left by a process long gone holds the replacement for one reconcile at most.
 */
export function defragmentationUnderWay(previous: DistributedKVStatus | undefined): string | undefined {
  const maintenance = previous?.conditions?.find((c) => c.type === 'Maintenance');
  if (maintenance?.status !== 'True' || !['Defragmenting', 'Recovering'].includes(maintenance.reason ?? '')) return undefined;
  return `a defragmentation is under way (${maintenance.message})`;
}

/** The image the live StatefulSet's pod template runs (its member container's). */
export function templateImage(statefulSet: CachedObject): string | undefined {
  return (statefulSet.spec as { template?: { spec?: { containers?: { image?: string }[] } } } | undefined)?.template?.spec?.containers?.[0]?.image;
}

/** The live pod template's member container arguments. */
function templateArgs(statefulSet: CachedObject): readonly string[] {
  return (statefulSet.spec as { template?: { spec?: { containers?: { args?: string[] }[] } } } | undefined)?.template?.spec?.containers?.[0]?.args ?? [];
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
      args: p.spec?.containers?.[0]?.args ?? [],
      deleting: Boolean(p.metadata.deletionTimestamp),
    }));
}

async function upgradeStep(
  read: MembershipReader, cr: CachedObject, resource: ValidResource, identity: ClusterIdentity, statefulSet: CachedObject,
  status: MembershipStatus, membership: Membership, detectOnly: boolean, result: MembershipStepResult,
): Promise<MembershipDecision> {
  const namespace = cr.metadata.namespace!;
  const sts = statefulSet as CachedObject & { spec?: { replicas?: number }; status?: { observedGeneration?: number; updateRevision?: string; currentRevision?: string; updatedReplicas?: number } };
  const replicas = sts.spec?.replicas ?? 1;
  // The live template may still be the old one: this reconcile applies the new one after this step.
  const liveImage = templateImage(sts);
  if (liveImage !== resource.spec.image) {
    const upgrade = { upgrading: true, message: `applying the new pod template (${resource.spec.image})`, currentVersion: liveImage ?? resource.spec.image, targetVersion: resource.spec.image, updatedMembers: 0 };
    return { result: { ...result, upgrade, requeueAfterMs: Math.min(result.requeueAfterMs ?? 2_000, 2_000) } };
  }
  const statefulSetCurrent = (sts.status?.observedGeneration ?? 0) >= (sts.metadata.generation ?? 0);
  const settled = statefulSetCurrent && sts.status?.updateRevision === sts.status?.currentRevision && (sts.status?.updatedReplicas ?? 0) >= replicas;
  // Every pod runs the template, but a member whose pod came back from a TLS peer template out of band may still
  // advertise http (tls-migration.ts, gateSwitchingRestart): then the pods are read, and its URL switched below.
  const peerUrlBehind = templateTls(templateArgs(sts))?.peer === true && status.members.some((m) => m.peerUrls.some((u) => u.startsWith('http:')));
  if (settled && !peerUrlBehind) {
    const upgrade = { upgrading: false, message: `all ${replicas} members run ${resource.spec.image}`, currentVersion: resource.spec.image, targetVersion: resource.spec.image, updatedMembers: replicas };
    return { result: { ...result, upgrade } };
  }
  const pods = await read.memberPods(namespace, identity);
  const step = decideUpgradeStep({
    targetImage: resource.spec.image, targetArgs: templateArgs(sts), replicas, statefulSetCurrent, updateRevision: sts.status?.updateRevision,
    pods, membership: status,
  });
  // A migration to TLS switches each member's peer URL just before its restart (tls-migration.ts).
  const action = statefulSetCurrent ? gateSwitchingRestart(step.action, pods, status.members, templateArgs(sts)) : step.action;
  const { action: _decided, requeueAfterMs, ...upgrade } = step;
  const next: MembershipStepResult = { ...result, upgrade, requeueAfterMs: Math.min(result.requeueAfterMs ?? Infinity, requeueAfterMs ?? Infinity) };
  if (next.requeueAfterMs === Infinity) delete (next as { requeueAfterMs?: number }).requeueAfterMs;
  if (!action || detectOnly) return { result: next };
  if (action.type === 'updatePeerUrls') {
    return {
      result: { ...next, upgrade: { ...upgrade, message: `switching ${action.pod}'s peer URL to ${action.peerUrls.join(',')} before restarting it with TLS` }, changed: `switched ${action.pod}'s peer URL to ${action.peerUrls.join(',')} before restarting it with TLS` },
      write: { kind: 'updatePeerUrls', id: action.id, pod: action.pod, peerUrls: action.peerUrls, via: membership },
      ifWriteFails: next,
    };
  }
  if (action.type === 'moveLeader') {
    return {
      result: { ...next, changed: `moved leadership from ${action.fromPod} to ${action.toPod} before restarting it` },
      write: { kind: 'moveLeader', toId: action.toId, fromPod: action.fromPod, toPod: action.toPod, via: membership },
      ifWriteFails: next,
    };
  }
  return {
    result: { ...next, restarted: `restarted ${action.pod.name} (${action.reason}) with ${action.change}` },
    write: { kind: 'restartMember', namespace, pod: action.pod, reason: action.reason, change: action.change },
    ifWriteFails: next,
  };
}

/** The reader against the cache, the members (etcd's client API, fenced by the leadership term) and the API server. */
export function membershipReader(
  client: KubeClient, config: GeneratorConfig, own: { readonly statefulSet?: CachedObject; readonly configMap?: CachedObject },
  options: {
    readonly addresses?: MemberAddresses; readonly timeoutMs?: number; readonly term?: AbortSignal; readonly now?: () => number;
    /** The TLS the members run, and the controller's client certificate for them (tls-step.ts). */
    readonly tls?: TlsInEffect; readonly clientTls?: EtcdClientTls;
  } = {},
): MembershipReader {
  return {
    config, ...own, addresses: options.addresses, tls: options.tls, healing: healingReader(client), recovery: recoveryReader(client), now: options.now ?? Date.now,
    quorumLoss: quorumLossClock, unhealthy: unhealthyMemory,
    members: (pods, endpoint) => new EtcdMembership(pods, endpoint, options.timeoutMs, options.term, options.clientTls),
    memberPods: (namespace, identity) => memberPods(client, namespace, identity),
  };
}
