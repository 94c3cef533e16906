/**
 * The healing part of the membership step: reads the member pods and claims
 * (fresh, only while something is off) and the clock of each unhealthy
 * member (status.members[].unhealthySince, what an earlier reconcile saw),
 * lets engines/etcd/replacement.ts decide one step, and says the write and
 * the Healing condition. The core makes the write (core/execute-writes.ts).
 * Nothing is remembered in the process: a controller killed at any step
 * finds the marked claim, the membership and the pods where it left them,
 * and in status how many learners of a pod were removed for not catching
 * up (status.learnerRetry), which lengthens the next one's bound.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import type { CachedObject } from '../../kube/informer.js';
import { equalitySelector } from '../../kube/label-selector.js';
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import { dataLossIn, decideReplacementStep, learnerRetryAfter, RECENT_EXIT_MS, type CorruptionHashes, type HealingClaim, type LearnerRetry, type HealingPod, type ReplacementAction, type ReplacementStep } from '../../engines/etcd/replacement.js';
import type { KeyHash, MembershipStatus, MemberStatus } from '../../engines/membership.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { metaTime } from '../../model/meta-time.js';
import { DATA_VOLUME } from '../../constructs/stateful-set.js';
import { readMemberPods } from './member-pods.js';
import { unhealthyClocks, type UnhealthyLooks } from './unhealthy-memory.js';

/** The Healing condition, as status shows it. */
export interface HealingReport {
  readonly status: 'True' | 'False';
  readonly reason: 'Replacing' | 'MemberUnhealthy' | 'CorruptionUnresolved' | 'Healthy' | 'Replaced' | 'RecoveryRefused' | 'RecoveryWaiting' | 'Recovering' | 'Recovered';
  readonly message: string;
}

/** What the healing step reads, fresh from the API server. */
export interface HealingReader {
  pods(namespace: string, identity: ClusterIdentity): Promise<ReadonlyMap<string, HealingPod>>;
  claims(namespace: string, identity: ClusterIdentity, annotation: string): Promise<ReadonlyMap<string, HealingClaim>>;
}

export interface HealingInput {
  readonly config: GeneratorConfig;
  readonly namespace: string;
  readonly identity: ClusterIdentity;
  readonly size: number;
  readonly replicas: number;
  readonly membership: MembershipStatus;
  readonly previous?: DistributedKVStatus;
  readonly pod: (ordinal: number) => string;
  readonly peerUrl: (pod: string) => string;
  readonly now: number;
  /** Another change under way, in words (an upgrade, a storage step): no replacement starts. */
  readonly otherChange?: string;
  /**
   * What this process saw at its last look, and the cluster's uid: a member's clock is carried over from status
   * only when this process saw it unhealthy then (unhealthy-memory.ts). Absent: status is trusted as it is.
   */
  readonly seen?: { readonly memory: UnhealthyLooks; readonly uid: string };
  /** Asks one member (by pod) for its hash of the keys at a revision: read only while a CORRUPT alarm stands. */
  readonly hashKV?: (pod: string, revision: number) => Promise<KeyHash>;
}

/**
 * While a CORRUPT alarm stands, every voting member's hash of its keys at one revision: the lowest any voter has
 * applied, so that every one can answer for it. Undefined without an alarm, or without a way to ask.
 */
async function readCorruptionHashes(membership: MembershipStatus, hashKV: HealingInput['hashKV']): Promise<CorruptionHashes | undefined> {
  if (!hashKV || !membership.alarms.some((a) => a.alarm === 'CORRUPT')) return undefined;
  const voters = membership.members.filter((m) => !m.learner);
  const revisions = voters.map((m) => m.revision).filter((r): r is number => r !== undefined);
  if (revisions.length === 0) return undefined;
  const revision = Math.min(...revisions);
  const byMember = new Map<string, KeyHash>();
  await Promise.all(voters.filter((m) => m.name).map(async (m) => {
    const hash = await hashKV(m.name, revision).catch(() => undefined);
    if (hash) byMember.set(m.id, hash);
  }));
  return { revision, voters: voters.length, byMember };
}

export interface HealingDecision {
  readonly step?: ReplacementStep;
  readonly report: HealingReport;
  /** Since when each unhealthy member (by its status name) has been unhealthy, for status. */
  readonly unhealthySince: ReadonlyMap<string, string>;
  /** The learner retry record for status once the step is made (status.learnerRetry): what a restarted controller bounds the next learner by. */
  readonly learnerRetry?: LearnerRetry;
  /** An Event the step's write earns (MemberReplacing when it is decided). */
  readonly event?: { readonly reason: 'MemberReplacing' | 'MemberReplaced'; readonly message: string };
}

const statusName = (m: MemberStatus): string => m.name || m.id;

/** Whether anything may need healing: only then are pods and claims read (no request in a healthy steady state). */
function worthALook(membership: MembershipStatus, replicas: number): boolean {
  return membership.members.some((m) => !m.healthy || m.learner || m.alarms.length > 0) || membership.alarms.length > 0 || membership.voters !== replicas;
}

export async function healingStep(read: HealingReader, input: HealingInput): Promise<HealingDecision> {
  const { membership, previous, now } = input;
  const before = new Map((previous?.members ?? []).map((m) => [m.name, m]));
  const seenBefore = input.seen?.memory.previous(input.seen.uid);
  const unhealthySince = unhealthyClocks(membership.members.filter((x) => !x.healthy).map(statusName), before, seenBefore, metaTime(new Date(now)));
  input.seen?.memory.remember(input.seen.uid, unhealthySince.keys());
  const previousHealing = previous?.conditions?.find((c) => c.type === 'Healing');
  const healthy: HealingReport = { status: 'False', reason: 'Healthy', message: 'no member needs replacing' };
  // A claim deleted under a healthy member is seen on the next look at the claims, which a healthy cluster reads
  // on its periodic look too: cheap (one list), and the only way to see it before the member's pod restarts.
  const look = worthALook(membership, input.replicas) || previousHealing?.status === 'True';
  const annotation = input.config.healing.replacementAnnotation;
  const [pods, claims] = look
    ? await Promise.all([read.pods(input.namespace, input.identity), read.claims(input.namespace, input.identity, annotation)])
    : [new Map<string, HealingPod>(), await read.claims(input.namespace, input.identity, annotation)];
  const corruptionHashes = await readCorruptionHashes(membership, input.hashKV);
  const step = decideReplacementStep({
    size: input.size, replicas: input.replicas, membership, pod: input.pod, peerUrl: input.peerUrl, pods, claims,
    unhealthySince: new Map(membership.members.filter((m) => unhealthySince.has(statusName(m))).map((m) => [m.id, Date.parse(unhealthySince.get(statusName(m))!)])),
    now, unhealthyAfterMs: input.config.healing.unhealthySeconds * 1000, learnerCatchUpMs: input.config.healing.learnerCatchUpSeconds * 1000,
    otherChange: input.otherChange, learnerRetry: previous?.learnerRetry, corruptionHashes,
  });
  const learnerRetry = learnerRetryAfter(previous?.learnerRetry, step, membership, input.size);
  if (step?.phase === 'Replacing') {
    const event = step.action?.type === 'mark' ? { reason: 'MemberReplacing' as const, message: `replacing ${step.action.pod} (member ${step.action.memberId}): ${step.action.reason}` }
      : step.action?.type === 'promote' ? { reason: 'MemberReplaced' as const, message: `${step.action.pod} replaced: it joined with an empty volume, caught up and votes again` } : undefined;
    return { step, report: { status: 'True', reason: 'Replacing', message: step.message }, unhealthySince, event, learnerRetry };
  }
  // A replacement's last step is the scaling step's promotion of the learner: until then, it is still under way.
  const learner = membership.members.find((m) => m.learner);
  if (previousHealing?.reason === 'Replacing' && learner) {
    return { step, report: { status: 'True', reason: 'Replacing', message: `${statusName(learner)} joined as a learner; promoted once it has caught up` }, unhealthySince, learnerRetry };
  }
  if (step?.phase === 'Waiting') return { step, report: { status: 'False', reason: step.corruptionHeld ? 'CorruptionUnresolved' : 'MemberUnhealthy', message: step.message }, unhealthySince, learnerRetry };
  if (previousHealing?.reason === 'Replacing') return { step, report: { status: 'False', reason: 'Replaced', message: `${previousHealing.message.replace(/^replacing (\S+?):.*$/, '$1')} replaced: every member votes again` }, unhealthySince, learnerRetry };
  return { step, report: (previousHealing?.reason === 'Replaced' || previousHealing?.reason === 'Recovered') && membership.members.every((m) => m.healthy) ? previousHealing as HealingReport : healthy, unhealthySince, learnerRetry };
}

/** A replacement step, in words (for an Event and the log). */
export function describeReplacementAction(action: ReplacementAction): string {
  switch (action.type) {
    case 'mark': return `marked ${action.pod}'s claim for replacement (member ${action.memberId})`;
    case 'remove': return `removed ${action.pod} (member ${action.id}) from the membership to replace it`;
    case 'deleteVolume': return `deleted ${action.pod}'s ${action.claim ? 'claim and ' : ''}pod so the StatefulSet creates them again, the volume empty`;
    case 'addLearner': return `added ${action.pod} to the membership as a learner, to join empty`;
    case 'promote': return `promoted ${action.pod} to a voting member`;
    case 'disarm': return `disarmed the CORRUPT alarm of the replaced member ${action.memberId}`;
  }
}

interface PodObject extends CachedObject {
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

interface Termination {
  readonly message?: string;
  readonly finishedAt?: string;
  readonly containerID?: string;
  readonly exitCode?: number;
}

interface ContainerStatus {
  readonly name?: string;
  readonly state?: { readonly running?: unknown; readonly terminated?: Termination };
  readonly lastState?: { readonly terminated?: Termination };
}

/**
 * The member's latest exit, of its etcd container or of an init container that failed (the `recover` container
 * exits before the member container runs), with the container it was.
 */
function latestExit(p: PodObject): { readonly container: string; readonly terminated: Termination } | undefined {
  const exits = [
    ...(p.status?.containerStatuses?.slice(0, 1) ?? []).map((c) => ({ container: c.name ?? '', terminated: c.lastState?.terminated })),
    ...(p.status?.initContainerStatuses ?? []).flatMap((c) => [
      { container: c.name ?? '', terminated: c.lastState?.terminated },
      // A failed init container shows its exit as its state until its restart, then as its last state.
      { container: c.name ?? '', terminated: c.state?.terminated?.exitCode ? c.state.terminated : undefined },
    ]),
  ].filter((e): e is { container: string; terminated: Termination } => e.terminated !== undefined);
  return exits.sort((a, b) => (Date.parse(b.terminated.finishedAt ?? '') || 0) - (Date.parse(a.terminated.finishedAt ?? '') || 0))[0];
}

/** How much of an exited member's log is read: etcd's panic line, then one goroutine's stack trace, fit well inside. */
const LOG_TAIL_LINES = 300;
const LOG_TAIL_BYTES = 128 * 1024;

/**
 * The data-loss words found in each exited container's log, by container ID: an exited container's log never
 * changes, so each is read once however long its pod crash-loops. Bounded: the oldest entries go first.
 */
export class ExitedLogMemory {
  private readonly found = new Map<string, string>();

  constructor(private readonly limit = 1000) {}

  get(containerId: string): string | undefined {
    return this.found.get(containerId);
  }

  remember(containerId: string, tail: string): void {
    if (this.found.size >= this.limit) this.found.delete(this.found.keys().next().value!);
    this.found.set(containerId, tail);
  }
}

const exitedLogs = new ExitedLogMemory();

/** The reader against the API server: the member pods (by selector) and the claims (by the volume template's labels). */
export function healingReader(client: KubeClient, now: () => number = Date.now, logs: ExitedLogMemory = exitedLogs): HealingReader {
  /**
   * The data-loss lines of a recently exited member container whose termination message names none (a real
   * kubelet keeps only the log's tail there), from the log the kubelet keeps of it: '' when it has none, or could
   * not be read (refused, the kubelet unreachable, the log rotated away). Either is remembered, so a pod that
   * crash-loops costs one read per exit, never one per reconcile; its next exit is a new container, read anew.
   */
  const lastLogTail = async (namespace: string, p: PodObject, exit: ReturnType<typeof latestExit>): Promise<string | undefined> => {
    const terminated = exit?.terminated;
    const finishedAt = Date.parse(terminated?.finishedAt ?? '');
    if (!exit?.container || !terminated?.containerID || p.status?.containerStatuses?.[0]?.state?.running || !(now() - finishedAt <= RECENT_EXIT_MS) || dataLossIn(terminated.message)) return undefined;
    const known = logs.get(terminated.containerID);
    if (known !== undefined) return known;
    const log = await client.request<unknown>('GET', `${resourcePath('v1', 'Pod', namespace, p.metadata.name)}/log`, {
      query: { container: exit.container, previous: 'true', tailLines: LOG_TAIL_LINES, limitBytes: LOG_TAIL_BYTES }, accept: 'text/plain', timeoutMs: 5_000,
    }).catch(() => ''); // unread: healing.unhealthySeconds still catches the member
    const text = typeof log === 'string' ? log : JSON.stringify(log); // a one-line log parses as JSON
    const tail = text.split('\n').filter((line) => dataLossIn(line)).join('\n');
    logs.remember(terminated.containerID, tail);
    return tail;
  };
  return {
    async pods(namespace, identity) {
      const pods = await readMemberPods(client, namespace, identity.selector, identity.statefulSetName) as PodObject[];
      return new Map(await Promise.all(pods.map(async (p) => {
        const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
        const exit = latestExit(p);
        const pod: HealingPod = {
          name: p.metadata.name, uid: p.metadata.uid!, deleting: Boolean(p.metadata.deletionTimestamp),
          createdAtMs: Date.parse(p.metadata.creationTimestamp ?? '') || 0,
          unschedulable: scheduled?.status === 'False' && scheduled.reason === 'Unschedulable' ? scheduled.message ?? '' : undefined,
          lastTermination: exit?.terminated.message,
          lastTerminationAtMs: Date.parse(exit?.terminated.finishedAt ?? '') || undefined,
          lastLogTail: await lastLogTail(namespace, p, exit),
          running: Boolean(p.status?.containerStatuses?.[0]?.state?.running),
        };
        return [p.metadata.name, pod] as const;
      })));
    },
    async claims(namespace, identity, annotation) {
      const list = await client.request<{ items: (CachedObject & { status?: { phase?: string } })[] }>('GET', resourcePath('v1', 'PersistentVolumeClaim', namespace), { query: { labelSelector: equalitySelector(identity.serverLabels) } });
      const member = new RegExp(`^${DATA_VOLUME}-(${identity.statefulSetName}-\\d+)$`);
      const claims = new Map<string, HealingClaim>();
      for (const c of list.items) {
        const pod = member.exec(c.metadata.name)?.[1];
        if (!pod) continue;
        claims.set(pod, { name: c.metadata.name, uid: c.metadata.uid!, deleting: Boolean(c.metadata.deletionTimestamp), phase: c.status?.phase, replacing: c.metadata.annotations?.[annotation] });
      }
      return claims;
    },
  };
}
