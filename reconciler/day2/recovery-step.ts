/**
 * The recovery part of the membership step, for a cluster that lost its
 * quorum (or whose members do not answer): a user's recovery request (the
 * DistributedKV's `healing.recoveryAnnotation`, a member pod or `auto`) is
 * judged by engines/etcd/recovery.ts and reported in the Healing condition,
 * with one Warning Event per message. Nothing is written: a refused request
 * changes nothing by design, and the rebuild from an accepted one is not yet
 * built (docs/auto-healing.md, "Quorum loss"), so the condition names the
 * member it would be rebuilt from and what to do meanwhile.
 */
import { decideRecovery } from '../../engines/etcd/recovery.js';
import type { MembershipStatus } from '../../engines/membership.js';
import type { HealingReport } from './member-replacement.js';

export interface RecoveryEvent {
  readonly reason: 'RecoveryRefused' | 'RecoveryUnavailable';
  readonly message: string;
}

export interface RecoveryJudgement {
  readonly report: HealingReport;
  readonly event: RecoveryEvent;
}

/** Undefined without a request: a lost quorum stays hands-off. `membership` is undefined when no member answered. */
export function recoveryStep(request: string | undefined, membership: MembershipStatus | undefined): RecoveryJudgement | undefined {
  const decision = decideRecovery(request, membership);
  if (!decision) return undefined;
  if (decision.kind === 'refused') {
    return { report: { status: 'False', reason: 'RecoveryRefused', message: decision.message }, event: { reason: 'RecoveryRefused', message: decision.message } };
  }
  const message = `${decision.message}; the controller does not rebuild a cluster yet: nothing is changed (docs/auto-healing.md, "Quorum loss")`;
  return { report: { status: 'False', reason: 'RecoveryUnavailable', message }, event: { reason: 'RecoveryUnavailable', message } };
}
