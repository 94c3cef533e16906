/**
 * The DistributedKV's status: what the controller observed, never what it
 * hopes. Conditions follow metav1.Condition: a condition's
 * lastTransitionTime changes only when its status does, so an unchanged
 * cluster produces an unchanged status and no write.
 */
import { metaTime } from '../../model/meta-time.js';
import type { Condition, DistributedKVStatus, GeneratedObject } from '../../imports/distributedkv.js';
import { quorum } from '../../model/quorum.js';
import { canonicalJson } from '../../model/desired-hash.js';
import type { ScalingPhase } from '../../engines/etcd/scaling.js';
import { hasQuorum, type MemberStatus } from '../../engines/membership.js';
import type { BackupObservation } from '../day2/backup-status.js';
import type { MaintenanceStepResult } from '../day2/maintenance-step.js';
import { standbyCondition, type FleetRole } from '../fleet/fleet-role.js';

export interface ObservedState {
  readonly generation: number;
  readonly size?: number;
  /** The live StatefulSet, if any. */
  readonly statefulSet?: { metadata: { generation?: number }; spec?: { replicas?: number }; status?: { readyReplicas?: number; updatedReplicas?: number; observedGeneration?: number } };
  /** What the backup CronJob's runs did, if the cluster has backups (backup-status.ts) and its backups run here. */
  readonly backup?: BackupObservation;
  /** Fleet mode: whether this cluster's controller writes what is global (fleet-role.ts). */
  readonly fleet?: FleetRole;
  readonly generatedObjects: readonly GeneratedObject[];
  /** Why the cluster is degraded, if it is. */
  readonly degraded?: { readonly reason: DegradedReason; readonly message: string };
  /** For etcd: where defragmentation and NOSPACE recovery stand, the quota and the alarms. */
  readonly maintenance?: Pick<MaintenanceStepResult, 'reason' | 'message' | 'quotaBytes' | 'alarms' | 'lastDefragmented'>;
  /** The TLS the members run, and when its certificates expire (day2/tls-step.ts). */
  readonly tls?: DistributedKVStatus['tls'];
  /**
   * Whether the cluster's NetworkPolicy is applied, and the condition that
   * says why (reconciler/day2/network-policy-adoption.ts). Unset on a
   * refusal: the recorded decision is kept as it was.
   */
  readonly networkPolicy?: { readonly state: 'Applied' | 'Withheld' | 'Off'; readonly condition: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string } };
  /** Monitoring on: whether the cluster's PodMonitor is applied or withheld for want of its CRD (day2/pod-monitor-step.ts). */
  readonly monitoring?: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
  /**
   * The CertificateExpiring condition: True while a certificate is due for renewal and cannot be renewed (mode operator,
   * certificate-rotation-writes.ts), or cert-manager has not renewed one in time (mode cert-manager, day2/cert-manager-tls-step.ts).
   */
  readonly certificateExpiring?: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
  /** The TLSSecretsReady condition (mode cert-manager only): the Secrets cert-manager writes are there and usable (day2/cert-manager-tls-step.ts). */
  readonly tlsSecrets?: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
  /** A volume growth under way, or blocked. */
  readonly storage?: { readonly kind: string; readonly message: string };
  /** For engines with a membership: where the membership step stands, and the members as they answered. */
  readonly membership?: {
    readonly phase: ScalingPhase;
    readonly message: string;
    readonly members?: readonly MemberStatus[];
    readonly upgrade?: { readonly upgrading: boolean; readonly message: string; readonly currentVersion: string; readonly targetVersion: string; readonly updatedMembers: number };
    /** The Healing condition: a member replacement under way, an unhealthy member waited for, or none. */
    readonly healing?: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
    /** Since when each unhealthy member (by its status name) has been unhealthy. */
    readonly unhealthySince?: ReadonlyMap<string, string>;
    /** A pod whose learners were removed for not catching up, and how many times (the next one's bound doubles for each). */
    readonly learnerRetry?: { readonly pod: string; readonly attempts: number };
  };
}

/**
 * Why a cluster is Degraded, most urgent first: a spec or configuration the
 * controller cannot act on, an object it must not take, writes that failed,
 * a field another writer keeps changing, drift it only reports.
 */
export type DegradedReason = 'InvalidSpec' | 'InvalidConfig' | 'NameClash' | 'S3PathClash' | 'ConfigChangeRefused' | 'StorageChangeRefused' | 'ImageChangeRefused' | 'RestoreSourceInvalid' | 'ObjectConflict' | 'ApplyFailed' | 'FieldConflict' | 'DriftDetected' | 'TLSProviderChangeRefused';

type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

function condition(input: ConditionInput, previous: readonly Condition[] | undefined, generation: number, now: string): Condition {
  const before = previous?.find((c) => c.type === input.type);
  return {
    ...input,
    observedGeneration: generation,
    lastTransitionTime: before && before.status === input.status ? before.lastTransitionTime : now,
  };
}

export function desiredStatus(observed: ObservedState, previous: DistributedKVStatus | undefined, now = new Date()): DistributedKVStatus {
  const timestamp = metaTime(now);
  const ready = observed.statefulSet?.status?.readyReplicas ?? 0;
  // Without a usable spec (invalid, or refused), the running StatefulSet still tells the truth about the members.
  const size = observed.size ?? observed.statefulSet?.spec?.replicas;
  const notCreatedReason = observed.size === undefined ? observed.degraded?.reason ?? 'InvalidSpec' : 'NotCreated';
  const conditions: ConditionInput[] = [];

  const members = observed.membership?.members;
  const voters = members?.filter((m) => !m.learner);
  const alarms = observed.maintenance?.alarms ?? [];
  // A full cluster still has its quorum and serves reads: Available says so, and that writes wait for the alarm.
  const refusingWrites = alarms.some((a) => a.alarm === 'NOSPACE') ? '; writes are refused until NOSPACE is disarmed (see the Alarm condition)' : '';
  if (observed.membership?.phase === 'QuorumLost') {
    conditions.push({ type: 'Available', status: 'False', reason: 'QuorumLost', message: observed.membership.message });
  } else if (voters && voters.length > 0) {
    // The members' own word: healthy and knowing a leader, which a ready pod alone does not prove.
    const healthy = voters.filter((m) => m.healthy).length;
    conditions.push(hasQuorum({ voters: voters.length, healthyVoters: healthy })
      ? { type: 'Available', status: 'True', reason: 'QuorumAvailable', message: `${healthy} of ${voters.length} voting members healthy; a majority (${quorum(voters.length)}) accepts writes${refusingWrites}` }
      : { type: 'Available', status: 'False', reason: 'QuorumUnavailable', message: `${healthy} of ${voters.length} voting members healthy; ${quorum(voters.length)} are needed for a majority` });
  } else if (size === undefined || !observed.statefulSet) {
    conditions.push({ type: 'Available', status: 'False', reason: notCreatedReason, message: observed.size === undefined ? 'the spec cannot be acted on and no StatefulSet runs; see the Degraded condition' : 'the StatefulSet does not exist yet' });
  } else {
    const needed = quorum(size);
    conditions.push(ready >= needed
      ? { type: 'Available', status: 'True', reason: 'QuorumAvailable', message: `${ready} of ${size} members ready; a majority (${needed}) accepts writes` }
      : { type: 'Available', status: 'False', reason: 'QuorumUnavailable', message: `${ready} of ${size} members ready; ${needed} are needed for a majority` });
  }

  const sts = observed.statefulSet;
  if (size !== undefined && sts) {
    const rolledOut = (sts.status?.observedGeneration ?? 0) >= (sts.metadata.generation ?? 0) && (sts.status?.updatedReplicas ?? 0) >= size && ready >= size;
    conditions.push(rolledOut
      ? { type: 'Progressing', status: 'False', reason: 'Reconciled', message: `all ${size} members run the desired revision and are ready` }
      : { type: 'Progressing', status: 'True', reason: 'RollingOut', message: `${sts.status?.updatedReplicas ?? 0} of ${size} members updated, ${ready} ready` });
  } else {
    conditions.push({ type: 'Progressing', status: 'False', reason: notCreatedReason, message: 'nothing to roll out' });
  }

  if (observed.membership) {
    const { phase, message, upgrade } = observed.membership;
    conditions.push(phase === 'Stable'
      ? { type: 'Scaling', status: 'False', reason: 'Stable', message }
      : { type: 'Scaling', status: 'True', reason: phase, message });
    const { healing } = observed.membership;
    if (healing) conditions.push({ type: 'Healing', ...healing });
    if (upgrade) {
      conditions.push(upgrade.upgrading
        ? { type: 'Upgrading', status: 'True', reason: 'RollingMembers', message: upgrade.message }
        : { type: 'Upgrading', status: 'False', reason: 'UpToDate', message: upgrade.message });
    }
  }

  if (observed.maintenance) {
    const { reason, message } = observed.maintenance;
    conditions.push({ type: 'Maintenance', status: reason === 'Defragmenting' || reason === 'Recovering' ? 'True' : 'False', reason, message });
    conditions.push(alarmCondition(alarms));
  }

  if (observed.storage) {
    conditions.push(observed.storage.kind === 'blocked'
      ? { type: 'StorageResizeBlocked', status: 'True', reason: 'ExpansionNotAllowed', message: observed.storage.message }
      : { type: 'StorageResizing', status: 'True', reason: 'GrowingClaims', message: observed.storage.message });
  }

  if (observed.backup) {
    const { failing, stale } = observed.backup;
    conditions.push({ type: 'BackupFailing', status: failing.status ? 'True' : 'False', reason: failing.reason, message: failing.message });
    conditions.push({ type: 'BackupStale', status: stale.status ? 'True' : 'False', reason: stale.reason, message: stale.message });
  }

  if (observed.fleet) conditions.push(standbyCondition(observed.fleet));

  if (observed.networkPolicy) conditions.push({ type: 'NetworkPolicy', ...observed.networkPolicy.condition });
  if (observed.monitoring) conditions.push({ type: 'Monitoring', ...observed.monitoring });

  if (observed.certificateExpiring) conditions.push({ type: 'CertificateExpiring', ...observed.certificateExpiring });
  if (observed.tlsSecrets) conditions.push({ type: 'TLSSecretsReady', ...observed.tlsSecrets });

  conditions.push(observed.degraded
    ? { type: 'Degraded', status: 'True', reason: observed.degraded.reason, message: observed.degraded.message }
    : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'every generated object matches the spec' });

  const status: DistributedKVStatus = {
    observedGeneration: observed.generation,
    readyReplicas: ready,
    conditions: conditions.map((c) => condition(c, previous?.conditions, observed.generation, timestamp)),
    generatedObjects: [...observed.generatedObjects],
  };
  // The controller's record of its NetworkPolicy decision: a refusal, which decides nothing, keeps it (and its condition).
  const networkPolicy = observed.networkPolicy?.state ?? previous?.networkPolicy;
  if (networkPolicy) status.networkPolicy = networkPolicy;
  const keptCondition = observed.networkPolicy ? undefined : previous?.conditions?.find((c) => c.type === 'NetworkPolicy');
  if (keptCondition) status.conditions!.push(keptCondition);
  const learnerRetry = observed.membership?.learnerRetry;
  if (learnerRetry) status.learnerRetry = { pod: learnerRetry.pod, attempts: learnerRetry.attempts };
  const upgrade = observed.membership?.upgrade;
  if (upgrade) {
    status.currentVersion = upgrade.currentVersion;
    status.targetVersion = upgrade.targetVersion;
    status.updatedMembers = upgrade.updatedMembers;
  }
  if (members) {
    const maintenance = observed.maintenance;
    const since = observed.membership?.unhealthySince;
    const before = new Map((previous?.members ?? []).map((m) => [m.name, m]));
    status.members = members.map((m) => {
      const name = m.name || m.id;
      const reported: NonNullable<DistributedKVStatus['members']>[number] = { name, role: m.learner ? 'learner' : m.leader ? 'leader' : 'follower', healthy: m.healthy };
      const unhealthySince = m.healthy ? undefined : since?.get(name);
      if (unhealthySince) reported.unhealthySince = unhealthySince;
      if (!maintenance) return reported;
      const dbSizeBytes = steadySize(m.dbSizeBytes, before.get(name)?.dbSizeBytes);
      const dbSizeInUseBytes = steadySize(m.dbSizeInUseBytes, before.get(name)?.dbSizeInUseBytes);
      if (dbSizeBytes !== undefined) reported.dbSizeBytes = dbSizeBytes;
      if (dbSizeInUseBytes !== undefined) reported.dbSizeInUseBytes = dbSizeInUseBytes;
      const own = maintenance.alarms.filter((a) => a.member === name).map((a) => a.alarm);
      if (own.length > 0) reported.alarms = [...new Set(own)].sort();
      if (maintenance.lastDefragmented[name]) reported.lastDefragmentationTime = maintenance.lastDefragmented[name];
      return reported;
    });
    if (maintenance) {
      status.quotaBytes = maintenance.quotaBytes;
      const fullest = Math.max(0, ...status.members.map((m) => m.dbSizeBytes ?? 0));
      if (maintenance.quotaBytes > 0) status.databaseFullPercent = Math.floor((fullest / maintenance.quotaBytes) * 100);
    }
  }
  if (observed.tls) status.tls = observed.tls;
  if (observed.backup?.lastBackupTime) status.lastBackupTime = observed.backup.lastBackupTime;
  if (observed.backup?.lastBackupFailureTime) status.lastBackupFailureTime = observed.backup.lastBackupFailureTime;
  return status;
}

const MIB = 2 ** 20;

/**
 * A database size as status reports it: whole MiB, and the previous value
 * while it moved by no more than one. A member's file grows and shrinks by
 * pages with every write and compaction; reported to the byte (or rounded
 * alone, flapping at a MiB boundary), a busy cluster's status would change on
 * every look at its members, each a status write. Fullness is a matter of MiB.
 */
export function steadySize(bytes: number | undefined, previous: number | undefined): number | undefined {
  if (bytes === undefined) return undefined;
  const rounded = Math.round(bytes / MIB) * MIB;
  return previous !== undefined && Math.abs(rounded - previous) <= MIB ? previous : rounded;
}

/** The Alarm condition: which alarms the cluster holds, naming the members (CORRUPT first: it is never disarmed automatically). */
function alarmCondition(alarms: readonly { readonly member: string; readonly alarm: 'NOSPACE' | 'CORRUPT' }[]): ConditionInput {
  if (alarms.length === 0) return { type: 'Alarm', status: 'False', reason: 'NoAlarm', message: 'no member holds an alarm' };
  const kinds = (['CORRUPT', 'NOSPACE'] as const).filter((k) => alarms.some((a) => a.alarm === k));
  const what = { NOSPACE: 'the database reached its quota: the cluster refuses writes', CORRUPT: 'its data differs from the other members\'' };
  const message = kinds.map((k) => `${k} on ${[...new Set(alarms.filter((a) => a.alarm === k).map((a) => a.member))].sort().join(', ')} (${what[k]})`).join('; ');
  return { type: 'Alarm', status: 'True', reason: kinds[0], message };
}

/** Whether writing `next` would change anything. */
export function statusChanged(previous: DistributedKVStatus | undefined, next: DistributedKVStatus): boolean {
  return canonicalJson(previous ?? {}) !== canonicalJson(next);
}

/**
 * The JSON merge patch that turns `previous` into `next`: every field of
 * `next`, and null for every field only `previous` has, in nested objects
 * too (a merge patch deletes only what it sets to null and merges objects
 * key by key: without them, a field such as lastBackupTime, or
 * tls.migration once a migration is done, that should disappear never does,
 * and every reconcile writes the same patch again). Arrays are replaced
 * whole by a merge patch: nothing to null in them.
 */
export function statusPatch(previous: DistributedKVStatus | undefined, next: DistributedKVStatus): { status: Record<string, unknown> } {
  return { status: withNulls(previous as Record<string, unknown> | undefined, next as Record<string, unknown>) };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function withNulls(previous: Record<string, unknown> | undefined, next: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...next };
  for (const [key, was] of Object.entries(previous ?? {})) {
    if (!(key in next)) patch[key] = null;
    else if (isObject(was) && isObject(next[key])) patch[key] = withNulls(was, next[key]);
  }
  return patch;
}
