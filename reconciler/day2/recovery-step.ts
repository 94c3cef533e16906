/**
 * The quorum-loss recovery part of the membership step: a user's request
 * (the DistributedKV's `healing.recoveryAnnotation`, a member pod or `auto`)
 * on a cluster that lost its quorum is judged (engines/etcd/recovery.ts) and,
 * once accepted, carried out one step per reconcile
 * (engines/etcd/rebuild.ts: record, mark, restart the source, let member
 * replacement take the others, finish). Reported in the Healing condition
 * (`RecoveryRefused`, `Recovering`, `Recovered`) with Events. The recovery
 * ConfigMap is the decision, read back on every reconcile while a recovery
 * is under way, so a restarted controller resumes it.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { KubeApiError } from '../../kube/client.js';
import type { CachedObject } from '../../kube/informer.js';
import { decideRebuildStep, type RebuildAction, type RebuildInput, type RecoveryRecord } from '../../engines/etcd/rebuild.js';
import { RECOVERY_ENV } from '../../engines/etcd/quorum-rebuild.js';
import { recoveryConfigName } from '../../engines/etcd/rebuild-container.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { HealingReport } from './member-replacement.js';

/** Where the recovery ConfigMap keeps what only the controller reads (the members read RECOVERY_ENV). */
const SOURCE_POD_UID = 'DKV_RECOVERY_SOURCE_POD_UID';

export interface RecoveryEvent {
  readonly type: 'Warning' | 'Normal';
  /** RecoveryRefused is reported once per message (it repeats on every reconcile); the others once per step made. */
  readonly reason: 'RecoveryRefused' | 'RecoveryStarted' | 'Recovering' | 'Recovered';
  readonly message: string;
}

export interface RecoveryDecision {
  readonly report: HealingReport;
  readonly event?: RecoveryEvent;
  readonly action?: RebuildAction;
  readonly requeueAfterMs?: number;
  /** The rebuilt member holds a quorum: member replacement runs, and its report is prefixed with this. */
  readonly replacing?: string;
}

/** Reads the recovery ConfigMap (fresh). */
export interface RecoveryReader {
  record(namespace: string, identity: ClusterIdentity): Promise<RecoveryRecord | undefined>;
}

/** Undefined without a request and without a recovery under way: a lost quorum stays hands-off. */
export function recoveryStep(input: RebuildInput): RecoveryDecision | undefined {
  const step = decideRebuildStep(input);
  if (!step) return undefined;
  if (step.kind === 'refused') {
    // Consumed with the refusal: the request is removed, so it cannot start a recovery on a later blip.
    const message = `${step.message}; the request is removed`;
    return { report: { status: 'False', reason: 'RecoveryRefused', message }, event: { type: 'Warning', reason: 'RecoveryRefused', message }, action: step.action };
  }
  if (step.kind === 'waiting') return { report: { status: 'False', reason: 'RecoveryWaiting', message: step.message }, requeueAfterMs: step.requeueAfterMs };
  if (step.kind === 'replacing') return { report: { status: 'True', reason: 'Recovering', message: step.message }, replacing: step.message };
  const { action } = step;
  const event: RecoveryEvent | undefined = action?.type === 'record' ? { type: 'Warning', reason: 'RecoveryStarted', message: `${action.message}; the others join it empty (decision recorded as recovery ${action.id})` }
    : action?.type === 'finish' ? { type: 'Normal', reason: 'Recovered', message: action.message }
      : action?.type === 'abandon' ? { type: 'Warning', reason: 'RecoveryRefused', message: action.message }
        : action ? { type: 'Normal', reason: 'Recovering', message: describeRebuildAction(action) } : undefined;
  const report: HealingReport = action?.type === 'finish' ? { status: 'False', reason: 'Recovered', message: action.message }
    : action?.type === 'abandon' ? { status: 'False', reason: 'RecoveryRefused', message: action.message }
      : { status: 'True', reason: 'Recovering', message: step.message };
  return { report, event, action, requeueAfterMs: step.requeueAfterMs };
}

/** A recovery step, in words (for the log). */
export function describeRebuildAction(action: RebuildAction): string {
  switch (action.type) {
    case 'record': return `recorded the recovery from ${action.pod} (member ${action.memberId}) as ${action.id}`;
    case 'mark': return `marked ${action.pod}'s claim: it joins the rebuilt cluster empty`;
    case 'restartSource': return `restarted ${action.pod}: its init container rebuilds a one-member cluster`;
    case 'finish': return 'removed the recovery request and its ConfigMap';
    case 'consume': return `removed the refused recovery request (${action.message})`;
    case 'unmark': return `took the recovery's mark off ${action.pod}'s claim: the cluster has its quorum`;
    case 'abandon': return 'removed the abandoned recovery\'s request and its ConfigMap';
  }
}

/** The recovery ConfigMap a `record` step creates. */
export function recoveryConfigMap(namespace: string, identity: ClusterIdentity, action: Extract<RebuildAction, { type: 'record' }>): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: recoveryConfigName(identity), namespace, labels: { ...identity.serverLabels } },
    data: { [RECOVERY_ENV.pod]: action.pod, [RECOVERY_ENV.memberId]: action.memberId, [RECOVERY_ENV.id]: action.id, [SOURCE_POD_UID]: action.sourcePodUid },
  };
}

export function recoveryReader(client: KubeClient): RecoveryReader {
  return {
    async record(namespace, identity) {
      let object: CachedObject & { data?: Record<string, string> };
      try {
        object = await client.request('GET', resourcePath('v1', 'ConfigMap', namespace, recoveryConfigName(identity)));
      } catch (e) {
        if (e instanceof KubeApiError && e.status === 404) return undefined;
        throw e;
      }
      return recordOf(object);
    },
  };
}

/** The record a recovery ConfigMap holds, or undefined when it lacks a field (written by hand: not acted on). */
export function recordOf(object: CachedObject & { data?: Record<string, string> }): RecoveryRecord | undefined {
  const data = object.data ?? {};
  const [pod, memberId, id, sourcePodUid] = [data[RECOVERY_ENV.pod], data[RECOVERY_ENV.memberId], data[RECOVERY_ENV.id], data[SOURCE_POD_UID]];
  if (!pod || !memberId || !id || !sourcePodUid) return undefined;
  return { name: object.metadata.name, uid: object.metadata.uid!, createdAtMs: Date.parse(object.metadata.creationTimestamp ?? '') || 0, pod, memberId, id, sourcePodUid };
}
