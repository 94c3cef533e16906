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
 */
import { metaTime } from '../../model/meta-time.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import type { Condition, DistributedKVStatus } from '../../imports/distributedkv.js';
import { KubeApiError, resourcePath } from '../../kube/client.js';
import type { CachedObject } from '../../kube/informer.js';
import { removeFinalizer } from '../core/execute-writes.js';
import type { ReconcileContext, ReconcileResult } from '../core/reconcile-context.js';

const LOOK_AGAIN_MS = 5_000;

interface JobStatus { conditions?: { type: string; status: string; message?: string }[]; completionTime?: string }

/** The Job a final backup runs as: the CronJob's name and `-final`. */
export function finalJobName(cronJobName: string): string {
  return `${cronJobName}-final`;
}

/**
 * Adds our finalizer while the cluster has backups (server-side apply of the
 * one list entry: finalizers are a set, so nobody else's is touched), and
 * removes it when backups are turned off. No request when it is as wanted.
 */
export async function keepFinalBackupFinalizer(ctx: ReconcileContext, cr: CachedObject, wanted: boolean): Promise<void> {
  const finalizer = ctx.config.backup.final.finalizer;
  const present = (cr.metadata.finalizers ?? []).includes(finalizer);
  if (wanted === present) return;
  if (!wanted) {
    await removeFinalizer(ctx, cr, finalizer);
    return;
  }
  const body = { apiVersion: API_VERSION, kind: KIND, metadata: { name: cr.metadata.name, namespace: cr.metadata.namespace, uid: cr.metadata.uid, finalizers: [finalizer] } };
  await ctx.writeEchoes.track(KIND, body, () => ctx.client.apply<CachedObject>(body, { fieldManager: ctx.config.controller.fieldManager }));
}

/** One step of a deleting cluster's final backup (its finalizer is present). */
export async function finalBackupOnDeletion(ctx: ReconcileContext, cr: CachedObject): Promise<ReconcileResult> {
  const { final } = ctx.config.backup;
  const involved = { apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata };
  const key = `${cr.metadata.namespace}/${cr.metadata.name}`;
  const letGo = async (type: 'Normal' | 'Warning', reason: string, message: string): Promise<ReconcileResult> => {
    // Said once: until the deletion reaches the cache, a reconcile may see the finalizer it already removed.
    if (ctx.memory.isNews(key, reason, message)) {
      if (type === 'Warning') await markFailed(ctx, cr, reason, message);
      await ctx.events.record(involved, type, reason, message);
      ctx.log.info('final backup', { key, reason, message });
    }
    await removeFinalizer(ctx, cr, final.finalizer);
    return {};
  };
  if (cr.metadata.annotations?.[final.skipAnnotation] === 'true') {
    return letGo('Normal', 'FinalBackupSkipped', `deleted without a final backup (${final.skipAnnotation}: "true")`);
  }
  const cronJob = [...(ctx.owned.get('batch/v1/CronJob')?.byIndex(cr.metadata.uid!) ?? [])].find((o) => o.metadata.namespace === cr.metadata.namespace);
  if (!cronJob) return letGo('Warning', 'FinalBackupFailed', 'no backup CronJob to take the final backup with; the deletion goes on without one');

  const jobName = finalJobName(cronJob.metadata.name);
  const namespace = cr.metadata.namespace!;
  const job = ctx.owned.get('batch/v1/Job')?.get(`${namespace}/${jobName}`);
  const done = (job?.status as JobStatus | undefined)?.conditions?.find((c) => c.status === 'True' && (c.type === 'Complete' || c.type === 'Failed'));
  if (done?.type === 'Complete') return letGo('Normal', 'FinalBackupTaken', `final backup Job ${jobName} completed at ${(job!.status as JobStatus).completionTime ?? 'now'}`);
  if (done?.type === 'Failed') return letGo('Warning', 'FinalBackupFailed', `final backup Job ${jobName} failed${done.message ? `: ${done.message}` : ''}; the deletion goes on without it`);

  const deadline = Date.parse(cr.metadata.deletionTimestamp!) + final.timeoutSeconds * 1000;
  if (ctx.now() >= deadline) {
    return letGo('Warning', 'FinalBackupFailed', `no final backup within ${final.timeoutSeconds} s of the deletion${job ? ` (Job ${jobName} still running)` : ''}; the deletion goes on without it`);
  }
  if (!job) {
    const template = (cronJob.spec as { jobTemplate: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: unknown } }).jobTemplate;
    try {
      await ctx.client.request('POST', resourcePath('batch/v1', 'Job', namespace), {
        body: {
          apiVersion: 'batch/v1', kind: 'Job',
          metadata: {
            name: jobName, namespace, labels: template.metadata?.labels, annotations: { ...template.metadata?.annotations, 'cronjob.kubernetes.io/instantiate': 'manual' },
            // Owned by the CronJob, as its scheduled Jobs are: status and metrics read it like any other run, and it goes with the
            // cluster. No blockOwnerDeletion: setting it needs update on cronjobs/finalizers where OwnerReferencesPermissionEnforcement runs.
            ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: cronJob.metadata.name, uid: cronJob.metadata.uid, controller: true }],
          },
          spec: template.spec,
        },
      });
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 409)) throw e; // created by an earlier reconcile the cache has not seen yet
    }
    await ctx.events.record(involved, 'Normal', 'FinalBackupStarted', `deleting: final backup Job ${jobName} started; the deletion waits for it up to ${final.timeoutSeconds} s`);
  }
  return { requeueAfterMs: Math.max(1000, Math.min(LOOK_AGAIN_MS, deadline - ctx.now())) };
}

/** A FinalBackup condition, for whoever reads the object in its last moments (and for the Event's sake, a record in status). */
async function markFailed(ctx: ReconcileContext, cr: CachedObject, reason: string, message: string): Promise<void> {
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
