/**
 * What a reconcile tells: Events for what it did and for problems that are
 * news, and the status, written through the status subresource only when
 * it changed. Status describes the live objects, never what the controller
 * hoped to write.
 */
import { metaTime } from '../../model/meta-time.js';
import { observeBackups, type BackupInput, type BackupObservation, type JobLike } from '../day2/backup-status.js';
import type { KubeObject } from '../../model/kube-object.js';
import type { Condition, DistributedKVStatus, GeneratedObject } from '../../imports/distributedkv.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import type { WriteOutcome } from './execute-writes.js';
import type { CachedObject } from '../../kube/informer.js';
import { KubeApiError, resourcePath } from '../../kube/client.js';
import type { FinalBackupDecision } from '../day2/final-backup.js';
import type { MembershipStepResult } from '../day2/membership-step.js';
import type { MaintenanceStepResult } from '../day2/maintenance-step.js';
import type { StorageStep } from '../../engines/storage-growth.js';
import type { NetworkPolicyAdoption } from '../day2/network-policy-adoption.js';
import type { HeldField, WritePlan } from './plan-writes.js';
import { objectName, TerminalError, type ReconcileContext } from './reconcile-context.js';
import type { Refusal } from './step-decision.js';
import { desiredStatus, statusChanged, statusPatch, type DegradedReason, type ObservedState } from './status.js';

export interface ReconcileReport {
  readonly cr: CachedObject;
  readonly key: string;
  readonly size: number;
  readonly desired: readonly KubeObject[];
  readonly live: ReadonlyMap<string, CachedObject | undefined>;
  readonly plan: WritePlan;
  readonly outcome: WriteOutcome;
  /** The membership step of this reconcile, for engines with a membership. */
  readonly membership?: MembershipStepResult;
  /** Where a volume growth stands. */
  readonly storage?: StorageStep;
  /** Whether the NetworkPolicy is applied, withheld or off (network-policy-adoption.ts). */
  readonly networkPolicy: NetworkPolicyAdoption;
  /** The Monitoring condition while monitoring is on (day2/pod-monitor-step.ts). */
  readonly monitoring?: ObservedState['monitoring'];
  /** The maintenance step of this reconcile (etcd, when the members answered). */
  readonly maintenance?: MaintenanceStepResult;
  /** The TLS the members run and its certificates' expiry (day2/tls-step.ts); with a problem, why it is not as the spec asks. */
  readonly tls?: ObservedState['tls'];
  /** A TLS Secret the controller cannot use or create, in words (a Warning Event, once). */
  readonly tlsProblem?: string;
  /** The CertificateExpiring condition (a Warning Event, once, when True). */
  readonly certificateExpiring?: ObservedState['certificateExpiring'];
  readonly tlsSecrets?: ObservedState['tlsSecrets'];
  /** What the certificate rotation step did this reconcile (a Normal Event). */
  readonly rotated?: string;
}

export function describeHeld(field: HeldField): string {
  return `${field.object} ${field.path}: ${field.manager ?? 'another writer'} keeps changing it; left alone until ${metaTime(field.until)}`;
}

/**
 * Whether a problem is news, to be reported in an Event: neither the
 * cluster's status nor this process has reported the same message for the
 * same reason. A problem that persists is reported once.
 */
function isNews(ctx: ReconcileContext, cr: CachedObject, key: string, reason: DegradedReason | 'QuorumLost' | 'SizeWarning' | 'QuotaTooSmall' | 'RecoveryRefused' | 'CorruptionUnresolved', message: string): boolean {
  const news = ctx.memory.isNews(key, reason, message);
  const inStatus = (cr.status as DistributedKVStatus | undefined)?.conditions?.some((c) => c.reason === reason && c.message === message);
  return news && !inStatus;
}

/** What a report found that decides when to look again. */
export interface ReportResult {
  readonly degraded?: DegradedReason;
  /** When BackupStale would turn True with nothing else changing (see backup-status.ts). */
  readonly backupStaleAtMs?: number;
}

/**
 * Records the reconcile's Events and writes its status (unless a create found its name taken: then the
 * next reconcile does); returns the Degraded reason, if any, and when backups turn stale.
 */
export async function reportOutcome(ctx: ReconcileContext, report: ReconcileReport): Promise<ReportResult> {
  const { cr, key, plan, outcome } = report;
  const involved = { apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata };
  const record = (type: 'Normal' | 'Warning', reason: string, message: string) => ctx.events.record(involved, type, reason, message);
  const conflictMessage = plan.conflicts.map((c) => c.message).sort().join('; ');
  const detected = outcome.detected.join('; ');
  const fightMessage = [...outcome.fights, ...plan.held].map(describeHeld).sort().join('; ');

  const events: Promise<void>[] = [];
  if (report.tlsProblem && ctx.memory.isNews(key, 'TLSCertificateProblem', report.tlsProblem)) events.push(record('Warning', 'TLSCertificateProblem', report.tlsProblem));
  const expiring = report.certificateExpiring?.status === 'True' ? report.certificateExpiring.message : '';
  if (expiring && ctx.memory.isNews(key, 'CertificateExpiring', expiring)) events.push(record('Warning', 'CertificateExpiring', expiring));
  if (report.rotated) events.push(record('Normal', 'CertificateRotation', report.rotated));
  if (outcome.created.length > 0) events.push(record('Normal', 'Created', `created ${outcome.created.join(', ')}`));
  if (outcome.updated.length > 0) events.push(record('Normal', 'Updated', `updated to match the spec: ${outcome.updated.join(', ')}`));
  for (const message of outcome.corrected) events.push(record('Warning', 'DriftCorrected', message));
  for (const field of outcome.fights) events.push(record('Warning', 'FieldConflict', `${describeHeld(field)}: it is no longer corrected on every change (see "Handing a field over" in docs/operating.md)`));
  for (const message of outcome.notKept) events.push(record('Warning', 'FieldsNotKept', message));
  for (const name of outcome.pruned) events.push(record('Normal', 'Pruned', `${name} deleted: no longer part of the spec`));
  if (conflictMessage && isNews(ctx, cr, key, 'ObjectConflict', conflictMessage)) events.push(record('Warning', 'ObjectConflict', conflictMessage));
  if (outcome.failures.length > 0) events.push(record('Warning', 'ApplyFailed', outcome.failures.join('; ')));
  if (detected && isNews(ctx, cr, key, 'DriftDetected', detected)) events.push(record('Warning', 'DriftDetected', detected));
  const membership = report.membership;
  if (membership?.changed) events.push(record('Normal', 'MembershipChanged', `${membership.changed} (${membership.message})`));
  if (membership?.restarted) events.push(record('Normal', 'MemberRestarted', membership.restarted));
  if (membership?.healingEvent) events.push(record('Normal', membership.healingEvent.reason, membership.healingEvent.message));
  if (membership?.phase === 'QuorumLost' && isNews(ctx, cr, key, 'QuorumLost', membership.message)) events.push(record('Warning', 'QuorumLost', membership.message));
  // A CORRUPT alarm held for a human stands until someone acts: reported once per message.
  const held = membership?.healing?.reason === 'CorruptionUnresolved' ? membership.healing.message : '';
  if (held && isNews(ctx, cr, key, 'CorruptionUnresolved', held)) events.push(record('Warning', 'CorruptionUnresolved', held));
  const recovery = membership?.recoveryEvent;
  // A refusal repeats on every reconcile while it stands: reported once. A start or an end is a step made: reported as made.
  if (recovery && (recovery.reason !== 'RecoveryRefused' || isNews(ctx, cr, key, recovery.reason, recovery.message))) events.push(record(recovery.type, recovery.reason, recovery.message));
  if (membership?.warning && isNews(ctx, cr, key, 'SizeWarning', membership.warning)) events.push(record('Warning', 'SizeWarning', membership.warning));
  const maintenance = report.maintenance;
  if (maintenance?.changed) events.push(record('Normal', maintenance.changedReason!, maintenance.changed));
  const raised = raisedAlarms(ctx, cr, key, maintenance);
  for (const { alarm, message } of raised.news) events.push(record('Warning', `Alarm${alarm}`, message));
  if (maintenance?.reason === 'QuotaTooSmall' && isNews(ctx, cr, key, 'QuotaTooSmall', maintenance.message)) events.push(record('Warning', 'QuotaTooSmall', maintenance.message));
  const withheld = report.networkPolicy.state === 'Withheld' ? report.networkPolicy.condition.message : '';
  // Once, as any problem (isNews): the status's NetworkPolicy condition (reason Withheld) already says it after a restart.
  const withheldShown = (cr.status as DistributedKVStatus | undefined)?.conditions?.some((c) => c.type === 'NetworkPolicy' && c.reason === 'Withheld' && c.message === withheld);
  if (withheld && ctx.memory.isNews(key, 'NetworkPolicyWithheld', withheld) && !withheldShown) events.push(record('Warning', 'NetworkPolicyWithheld', withheld));
  ctx.memory.resolvedExcept(key, [
    conflictMessage ? 'ObjectConflict' : '', detected ? 'DriftDetected' : '', membership?.phase === 'QuorumLost' ? 'QuorumLost' : '', membership?.warning ? 'SizeWarning' : '', recovery?.reason === 'RecoveryRefused' ? recovery.reason : '',
    maintenance?.reason === 'QuotaTooSmall' ? 'QuotaTooSmall' : '', withheld ? 'NetworkPolicyWithheld' : '', expiring ? 'CertificateExpiring' : '', ...raised.active,
  ].filter(Boolean));
  await Promise.all(events);
  // A create found its name taken by an object no cache shows (execute-writes.ts): the next reconcile,
  // at once, reads it and reports. A status written now would describe objects this one has not seen.
  if (outcome.taken.length > 0) return {};

  const blocked = new Set(plan.conflicts.map((c) => c.object));
  const current = (o: KubeObject): CachedObject | undefined => (blocked.has(objectName(o)) ? undefined : outcome.applied.get(objectName(o)) ?? report.live.get(objectName(o)));
  const generatedObjects: GeneratedObject[] = report.desired.map((o) => {
    const uid = current(o)?.metadata.uid;
    return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(uid ? { uid } : {}), hash: o.metadata.annotations![ctx.config.hashAnnotation] };
  });
  const statefulSet = report.desired.find((o) => o.kind === 'StatefulSet')!;
  const cronJob = report.desired.find((o) => o.kind === 'CronJob');
  const degraded: ObservedState['degraded'] = conflictMessage ? { reason: 'ObjectConflict', message: conflictMessage }
    : outcome.failures.length > 0 ? { reason: 'ApplyFailed', message: outcome.failures.join('; ') }
      : fightMessage ? { reason: 'FieldConflict', message: fightMessage }
        : detected ? { reason: 'DriftDetected', message: detected } : undefined;
  // From the CronJob as the API server last returned it (this reconcile's apply, else the cache) and the Jobs it ran:
  // a cluster's first status already says what its backups did, so no second write follows once the cache catches up.
  const backup = cronJob ? backupsOf(ctx, current(cronJob)) : undefined;
  await writeStatus(ctx, cr, {
    generation: cr.metadata.generation ?? 0,
    size: report.size,
    statefulSet: current(statefulSet) as ObservedState['statefulSet'],
    backup,
    generatedObjects,
    degraded,
    membership: membership && {
      phase: membership.phase, message: membership.message, members: membership.members, upgrade: membership.upgrade, healing: membership.healing,
      unhealthySince: membership.unhealthySince, learnerRetry: membership.learnerRetry,
    },
    storage: report.storage && report.storage.kind !== 'unchanged' && report.storage.kind !== 'refused' ? report.storage : undefined,
    maintenance,
    tls: report.tls,
    networkPolicy: report.networkPolicy,
    monitoring: report.monitoring,
    certificateExpiring: report.certificateExpiring,
    tlsSecrets: report.tlsSecrets,
  });
  return { degraded: degraded?.reason, backupStaleAtMs: backup?.staleAtMs };
}

/**
 * The alarms this reconcile found (`active`, as memory keys) and those that
 * are news (one Event each when raised, not one per reconcile, nor one per
 * member it spreads to): news unless this process reported it since it was
 * last raised, or the status's Alarm condition already names it.
 */
function raisedAlarms(ctx: ReconcileContext, cr: CachedObject, key: string, maintenance: MaintenanceStepResult | undefined): { active: string[]; news: { alarm: string; message: string }[] } {
  if (!maintenance) return { active: [], news: [] };
  const shown = (cr.status as DistributedKVStatus | undefined)?.conditions?.find((c) => c.type === 'Alarm' && c.status === 'True')?.message ?? '';
  const kinds = [...new Set(maintenance.alarms.map((a) => a.alarm))];
  const news = kinds
    .filter((alarm) => ctx.memory.isNews(key, `Alarm${alarm}`, alarm) && !new RegExp(`\\b${alarm} on\\b`).test(shown))
    .map((alarm) => {
      const members = [...new Set(maintenance.alarms.filter((a) => a.alarm === alarm).map((a) => a.member))].sort().join(', ');
      const what = alarm === 'NOSPACE'
        ? 'the database reached its quota and the cluster refuses writes; the controller compacts, defragments and disarms it'
        : 'its data differs from the other members\'; it is never disarmed automatically';
      return { alarm, message: `${alarm} on ${members}: ${what}` };
    });
  return { active: kinds.map((k) => `Alarm${k}`), news };
}

/**
 * Reports a cluster the controller cannot act on (invalid spec or
 * configuration, a name clash, a change its StatefulSet cannot take) and
 * writes nothing else: its running objects stay as they are, and its status
 * still tells the truth about them. Not retried until something changes.
 */
export async function refuse(ctx: ReconcileContext, cr: CachedObject, key: string, owned: readonly CachedObject[], reason: DegradedReason, message: string): Promise<never> {
  await reportRefusal(ctx, cr, key, owned, reason, message);
  throw new TerminalError(`${reason}: ${message}`);
}

/**
 * Reports a refusal that may go away without the spec changing (a backup
 * still uploading, S3 down): the same status, but the reconcile fails
 * with an ordinary error, so the queue retries it with backoff.
 */
export async function refuseForNow(ctx: ReconcileContext, cr: CachedObject, key: string, owned: readonly CachedObject[], reason: DegradedReason, message: string): Promise<never> {
  await reportRefusal(ctx, cr, key, owned, reason, message);
  throw new Error(`${reason}: ${message}`);
}

/** Acts on a check's or a step's refusal: refuse, or refuseForNow when it may go away on its own. */
export function refuseWith(ctx: ReconcileContext, cr: CachedObject, key: string, owned: readonly CachedObject[], refusal: Refusal): Promise<never> {
  return refusal.retry === 'backoff'
    ? refuseForNow(ctx, cr, key, owned, refusal.reason, refusal.message)
    : refuse(ctx, cr, key, owned, refusal.reason, refusal.message);
}

async function reportRefusal(ctx: ReconcileContext, cr: CachedObject, key: string, owned: readonly CachedObject[], reason: DegradedReason, message: string): Promise<void> {
  const previous = cr.status as DistributedKVStatus | undefined;
  const news = isNews(ctx, cr, key, reason, message);
  const generatedObjects: GeneratedObject[] = owned
    .map((o) => ({ apiVersion: o.apiVersion!, kind: o.kind!, name: o.metadata.name, uid: o.metadata.uid!, hash: o.metadata.annotations?.[ctx.config.hashAnnotation] ?? '' }))
    .sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`));
  // The Event first, as reportOutcome does: whoever sees the Degraded status finds the Event that explains it.
  if (news) await ctx.events.record({ apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata }, 'Warning', reason, message);
  await writeStatus(ctx, cr, {
    generation: cr.metadata.generation ?? 0,
    statefulSet: owned.find((o) => o.kind === 'StatefulSet') as ObservedState['statefulSet'],
    backup: backupsOf(ctx, owned.find((o) => o.kind === 'CronJob')),
    generatedObjects: owned.length > 0 ? generatedObjects : previous?.generatedObjects ?? [],
    degraded: { reason, message },
  });
}

/**
 * Reports how a deleting cluster's final backup ended (final-backup.ts), once: until the deletion
 * reaches the cache, a reconcile may see the finalizer it already removed. A failure is also a
 * FinalBackup condition, for whoever reads the object in its last moments.
 */
export async function reportFinalBackup(ctx: ReconcileContext, cr: CachedObject, outcome: Extract<FinalBackupDecision, { kind: 'letGo' }>): Promise<void> {
  const key = `${cr.metadata.namespace}/${cr.metadata.name}`;
  const { type, reason, message } = outcome;
  if (!ctx.memory.isNews(key, reason, message)) return;
  if (type === 'Warning') await markFinalBackupFailed(ctx, cr, reason, message);
  await ctx.events.record({ apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata }, type, reason, message);
  ctx.log.info('final backup', { key, reason, message });
}

async function markFinalBackupFailed(ctx: ReconcileContext, cr: CachedObject, reason: string, message: string): Promise<void> {
  const previous = (cr.status as DistributedKVStatus | undefined)?.conditions ?? [];
  const condition: Condition = {
    type: 'FinalBackup', status: 'False', reason, message,
    observedGeneration: cr.metadata.generation ?? 0, lastTransitionTime: metaTime(ctx.now()),
  };
  try {
    await ctx.client.request('PATCH', `${resourcePath(API_VERSION, KIND, cr.metadata.namespace, cr.metadata.name)}/status`, {
      body: { status: { conditions: [...previous.filter((c) => c.type !== 'FinalBackup'), condition] } }, contentType: 'application/merge-patch+json',
    });
  } catch (e) {
    if (!(e instanceof KubeApiError && e.status === 404)) throw e;
  }
}

async function writeStatus(ctx: ReconcileContext, cr: CachedObject, observed: ObservedState): Promise<void> {
  // A standby's backups run in the active Kubernetes cluster: its own suspended CronJob says nothing about them.
  const fleet = ctx.fleet?.();
  observed = { ...observed, fleet, backup: fleet?.role === 'standby' ? undefined : observed.backup };
  recordBackupMetrics(ctx, cr.metadata.namespace!, cr.metadata.name, observed.backup);
  const previous = cr.status as DistributedKVStatus | undefined;
  const next = desiredStatus(observed, previous, new Date(ctx.now()));
  if (!statusChanged(previous, next)) return;
  // Only the status subresource: the controller never writes spec. No resourceVersion
  // precondition: the status describes what was observed, and only the leader writes it.
  const path = resourcePath(API_VERSION, KIND, cr.metadata.namespace, cr.metadata.name);
  try {
    await ctx.client.request('PATCH', `${path}/status`, { body: statusPatch(previous, next), contentType: 'application/merge-patch+json' });
  } catch (e) {
    // Deleted while this reconcile ran (controller-runtime ignores NotFound the same way): nothing is left to
    // report on, and its delete event has queued it already. Not a failure to retry with backoff.
    if (!(e instanceof KubeApiError && e.status === 404)) throw e;
    ctx.log.debug('cluster deleted while reconciling: status not written', { cluster: `${cr.metadata.namespace}/${cr.metadata.name}` });
  }
}

/** What the backup CronJob's Jobs did, judged by the schedule it runs (the live one: a refused spec may name another). */
export function backupsOf(ctx: ReconcileContext, cronJob: CachedObject | undefined): BackupObservation | undefined {
  const schedule = (cronJob?.spec as { schedule?: string } | undefined)?.schedule;
  if (!cronJob || !schedule) return undefined;
  const jobs = ctx.owned.get('batch/v1/Job')?.byIndex(cronJob.metadata.uid!) ?? [];
  return observeBackups({ schedule, cronJob: cronJob as BackupInput['cronJob'], jobs: jobs as unknown as JobLike[], now: ctx.now() });
}

/** The backup gauges of one cluster: set from what its Jobs did, removed when it has no backups (or is gone). */
export function recordBackupMetrics(ctx: Pick<ReconcileContext, 'metrics'>, namespace: string, name: string, backup: BackupObservation | undefined): void {
  const labels = { namespace, name };
  const { backupLastSuccess, backupLastDuration, backupFailing, backupStale } = ctx.metrics;
  if (backup?.lastBackupTime) backupLastSuccess.set(labels, Date.parse(backup.lastBackupTime) / 1000);
  else backupLastSuccess.remove(labels);
  if (backup) {
    backupFailing.set(labels, backup.failing.status ? 1 : 0);
    backupStale.set(labels, backup.stale.status ? 1 : 0);
  } else {
    backupFailing.remove(labels);
    backupStale.remove(labels);
  }
  if (backup?.lastDurationSeconds !== undefined) backupLastDuration.set(labels, backup.lastDurationSeconds);
  else backupLastDuration.remove(labels);
}
