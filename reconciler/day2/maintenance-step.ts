/**
 * The Day-2 maintenance step of a reconcile, for etcd: from the membership
 * the membership step just read (no second look at the members), let the
 * engine decide one step of defragmentation or NOSPACE recovery
 * (engines/etcd/defragmentation.ts, pure), and hand back what to report and
 * the one call to make, which the core makes (core/reconcile.ts). It runs
 * after the cluster's objects were written, so that a scaling, upgrade or
 * storage step of the same reconcile holds it back.
 */
import type { ValidResource } from '../../api/validate.js';
import { decideDefragmentationStep, type DefragmentationAction, type MaintenanceReason } from '../../engines/etcd/defragmentation.js';
import type { MemberAlarm, Membership } from '../../engines/membership.js';
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import { backendQuotaBytes } from '../../model/backend-quota.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { metaTime } from '../../model/meta-time.js';
import type { MembershipStepResult } from './membership-step.js';

/** Where maintenance stands, for status (the Maintenance and Alarm conditions, the members' sizes). */
export interface MaintenanceStepResult {
  readonly reason: MaintenanceReason;
  readonly message: string;
  /** The quota each member runs with. */
  readonly quotaBytes: number;
  /** Every alarm the cluster holds, by pod name (the member's id where it has no pod name). */
  readonly alarms: readonly { readonly member: string; readonly alarm: MemberAlarm['alarm'] }[];
  /** When each member was last defragmented (ISO times, by pod), this step's included. */
  readonly lastDefragmented: Readonly<Record<string, string>>;
  /** The call made in this step, in words (for an Event). */
  readonly changed?: string;
  /** The Event's reason for it. */
  readonly changedReason?: 'Defragmented' | 'LeadershipMoved' | 'Compacted' | 'AlarmDisarmed';
  readonly requeueAfterMs?: number;
}

/** The one call a maintenance step asks for, made by the core through the client the members were read with. */
export interface MaintenanceWrite {
  readonly action: DefragmentationAction;
  readonly via: Membership;
}

export interface MaintenanceDecision {
  /** What to report once the write is made (or when there is none). */
  readonly result: MaintenanceStepResult;
  readonly write?: MaintenanceWrite;
  /** What to report when the write fails. */
  readonly ifWriteFails?: MaintenanceStepResult;
}

export interface MaintenanceInput {
  readonly config: GeneratorConfig;
  readonly resource: ValidResource;
  /** The status as the cluster's object holds it: where the last defragmentation of each member is remembered. */
  readonly previous?: DistributedKVStatus;
  readonly membership: MembershipStepResult;
  /**
   * The volume size the members run with (the live StatefulSet's template),
   * when known: while volumes grow, the members keep the quota of their
   * current volume (synthesizeCluster's volumeSizeNow), not the spec's next one.
   */
  readonly volumeSizeNow?: string;
  /** A storage step under way (growing claims, replacing the StatefulSet), in words. */
  readonly storageStep?: string;
  /** The revision this controller last compacted the cluster at, and when (its memory). */
  readonly compacted?: { readonly revision: number; readonly at: number };
  readonly detectOnly: boolean;
  readonly now: number;
}

/** Undefined when the members did not answer: nothing can be said or done about their databases. */
export function maintenanceStep(input: MaintenanceInput): MaintenanceDecision | undefined {
  const { membership, resource, config } = input;
  const read = membership.membership;
  if (!read) return undefined;
  const { status, via } = read;
  // The smaller of the spec's quota and the live volumes' (the generator renders the same: constructs/stateful-set.ts).
  const quotaBytes = Math.min(
    backendQuotaBytes(resource.spec),
    input.volumeSizeNow === undefined ? Infinity : backendQuotaBytes({ ...resource.spec, storage: { ...resource.spec.storage, size: input.volumeSizeNow } }),
  );
  const previousTimes = Object.fromEntries((input.previous?.members ?? []).filter((m) => m.lastDefragmentationTime).map((m) => [m.name, m.lastDefragmentationTime!]));
  const podOf = (id: string) => status.members.find((m) => m.id === id)?.name || id;
  const alarms = status.alarms.map((a) => ({ member: podOf(a.memberId), alarm: a.alarm }));
  const defragmentation = resource.spec.maintenance?.defragmentation;
  const otherStep = membership.phase !== 'Stable' ? `the membership change (${membership.message})`
    : membership.upgrade?.upgrading ? `the upgrade (${membership.upgrade.message})`
      : input.storageStep ? `the storage step (${input.storageStep})` : undefined;
  const step = decideDefragmentationStep({
    membership: status, quotaBytes,
    minFreePercent: defragmentation?.minFreePercent ?? 50,
    minSizeBytes: config.maintenance.minDefragmentationSizeMiB * 2 ** 20,
    intervalMs: config.maintenance.defragmentationIntervalMinutes * 60_000,
    nospaceMarginPercent: config.maintenance.nospaceMarginPercent,
    window: defragmentation?.window,
    lastDefragmented: Object.fromEntries(Object.entries(previousTimes).map(([pod, time]) => [pod, Date.parse(time)])),
    otherStep, compacted: input.compacted, now: input.now,
  });
  const base: MaintenanceStepResult = { reason: step.reason, message: step.message, quotaBytes, alarms, lastDefragmented: previousTimes, requeueAfterMs: step.requeueAfterMs };
  const { action } = step;
  if (!action || input.detectOnly) return { result: base };
  const ifWriteFails = { ...base, requeueAfterMs: Math.min(base.requeueAfterMs ?? 5_000, 5_000) };
  const write = { action, via };
  switch (action.type) {
    case 'defragment':
      return {
        result: { ...base, lastDefragmented: { ...previousTimes, [action.pod]: metaTime(input.now) }, changed: step.message.replace(/^defragmenting/, 'defragmented'), changedReason: 'Defragmented' },
        write, ifWriteFails,
      };
    case 'moveLeader':
      return { result: { ...base, changed: `moved leadership from ${action.fromPod} to ${action.toPod} to defragment ${action.fromPod}`, changedReason: 'LeadershipMoved' }, write, ifWriteFails };
    case 'compact':
      return { result: { ...base, changed: `compacted at revision ${action.revision} to recover from NOSPACE`, changedReason: 'Compacted' }, write, ifWriteFails };
    case 'disarm':
      return {
        result: { ...base, reason: 'Idle', alarms: alarms.filter((a) => a.alarm !== 'NOSPACE'), changed: step.message, changedReason: 'AlarmDisarmed' },
        write, ifWriteFails,
      };
  }
}

/** The result to report when the step's call failed (etcd refused it, or it timed out): looked at again soon. */
export function maintenanceNotYet(decision: MaintenanceDecision, error: string): MaintenanceStepResult {
  const failed = decision.ifWriteFails ?? decision.result;
  return { ...failed, message: `${failed.message}: not yet (${error})` };
}
