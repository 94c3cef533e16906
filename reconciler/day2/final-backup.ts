/**
 * The final backup: a cluster with backups that is deleted gets one more
 * backup before its objects go. While `spec.backup` is set, a finalizer of
 * ours (configuration `backup.final.finalizer`) holds any deletion; on
 * deletion the controller runs a Job from the CronJob's own template (so it
 * is the same runner with the same environment), waits for it, and then
 * lets the deletion go on, whatever happened:
 *
 *   - the Job succeeded: a `FinalBackupTaken` Event;
 *   - it failed, the CronJob is gone, or `backup.final.timeoutSeconds` passed
 *     since the deletion: a `FinalBackupFailed` Warning Event and condition,
 *     and the deletion goes on: it is never blocked forever;
 *   - the annotation `backup.final.skipAnnotation: "true"`: no backup, a
 *     `FinalBackupSkipped` Event.
 *
 * Each step is one idempotent write per reconcile: the Job has a fixed
 * name, so a crash between creating it and seeing it finish resumes.
 * This file decides each step; the core (reconcile.ts) makes its write and
 * reports it.
 */
import type { GeneratorConfig } from '../../api/config.js';
import type { CachedObject } from '../../kube/informer.js';

const LOOK_AGAIN_MS = 5_000;

interface JobStatus { conditions?: { type: string; status: string; message?: string }[]; completionTime?: string }

/** The Job a final backup runs as: the CronJob's name and `-final`. */
export function finalJobName(cronJobName: string): string {
  return `${cronJobName}-final`;
}

/**
 * Whether our finalizer is to be added (while the cluster has backups) or
 * removed (when backups are turned off); undefined when it is as wanted.
 */
export function finalizerChange(cr: CachedObject, finalizer: string, wanted: boolean): 'add' | 'remove' | undefined {
  const present = (cr.metadata.finalizers ?? []).includes(finalizer);
  return wanted === present ? undefined : wanted ? 'add' : 'remove';
}

/** What a deleting cluster's final backup needs now. */
export type FinalBackupDecision =
  /** The deletion goes on (our finalizer is removed), with an Event; a Warning also marks the FinalBackup condition. */
  | { readonly kind: 'letGo'; readonly type: 'Normal' | 'Warning'; readonly reason: 'FinalBackupSkipped' | 'FinalBackupTaken' | 'FinalBackupFailed'; readonly message: string }
  /** Create the Job (a Job of that name already there is fine: an earlier reconcile made it), say so in an Event, look again. */
  | { readonly kind: 'startJob'; readonly job: Record<string, unknown>; readonly namespace: string; readonly message: string; readonly requeueAfterMs: number }
  /** The Job runs: look again. */
  | { readonly kind: 'wait'; readonly requeueAfterMs: number };

export interface FinalBackupInput {
  /** The deleting cluster (its finalizer is present). */
  readonly cluster: CachedObject;
  readonly final: GeneratorConfig['backup']['final'];
  /** The cluster's backup CronJob, from the cache. */
  readonly cronJob?: CachedObject;
  /** A Job of the cluster's namespace by name, from the cache. */
  readonly job: (name: string) => CachedObject | undefined;
  /** Milliseconds since the epoch. */
  readonly now: number;
}

/** One step of a deleting cluster's final backup. */
export function decideFinalBackup(input: FinalBackupInput): FinalBackupDecision {
  const { cluster: cr, final, cronJob, now } = input;
  const letGo = (type: 'Normal' | 'Warning', reason: 'FinalBackupSkipped' | 'FinalBackupTaken' | 'FinalBackupFailed', message: string): FinalBackupDecision => ({ kind: 'letGo', type, reason, message });
  if (cr.metadata.annotations?.[final.skipAnnotation] === 'true') {
    return letGo('Normal', 'FinalBackupSkipped', `deleted without a final backup (${final.skipAnnotation}: "true")`);
  }
  if (!cronJob) return letGo('Warning', 'FinalBackupFailed', 'no backup CronJob to take the final backup with; the deletion goes on without one');

  const jobName = finalJobName(cronJob.metadata.name);
  const namespace = cr.metadata.namespace!;
  const job = input.job(jobName);
  const done = (job?.status as JobStatus | undefined)?.conditions?.find((c) => c.status === 'True' && (c.type === 'Complete' || c.type === 'Failed'));
  if (done?.type === 'Complete') return letGo('Normal', 'FinalBackupTaken', `final backup Job ${jobName} completed at ${(job!.status as JobStatus).completionTime ?? 'now'}`);
  if (done?.type === 'Failed') return letGo('Warning', 'FinalBackupFailed', `final backup Job ${jobName} failed${done.message ? `: ${done.message}` : ''}; the deletion goes on without it`);

  const deadline = Date.parse(cr.metadata.deletionTimestamp!) + final.timeoutSeconds * 1000;
  if (now >= deadline) {
    return letGo('Warning', 'FinalBackupFailed', `no final backup within ${final.timeoutSeconds} s of the deletion${job ? ` (Job ${jobName} still running)` : ''}; the deletion goes on without it`);
  }
  const requeueAfterMs = Math.max(1000, Math.min(LOOK_AGAIN_MS, deadline - now));
  if (job) return { kind: 'wait', requeueAfterMs };
  const template = (cronJob.spec as { jobTemplate: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: unknown } }).jobTemplate;
  return {
    kind: 'startJob',
    namespace,
    job: {
      apiVersion: 'batch/v1', kind: 'Job',
      metadata: {
        name: jobName, namespace, labels: template.metadata?.labels, annotations: { ...template.metadata?.annotations, 'cronjob.kubernetes.io/instantiate': 'manual' },
        // Owned by the CronJob, as its scheduled Jobs are: status and metrics read it like any other run, and it goes with the
        // cluster. No blockOwnerDeletion: setting it needs update on cronjobs/finalizers where OwnerReferencesPermissionEnforcement runs.
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: cronJob.metadata.name, uid: cronJob.metadata.uid, controller: true }],
      },
      spec: template.spec,
    },
    message: `deleting: final backup Job ${jobName} started; the deletion waits for it up to ${final.timeoutSeconds} s`,
    requeueAfterMs,
  };
}
