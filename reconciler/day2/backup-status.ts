/**
 * What the backups of a cluster really did, from the Jobs its CronJob ran
 * (pure; ../shared/notes/day2-operations.md §3 lists the pitfalls this
 * avoids): the last backup is the newest Job that *succeeded* (its
 * completionTime), never a Job that was merely scheduled
 * (`lastScheduleTime`) or one that failed; when the Job history was pruned,
 * the CronJob's own `lastSuccessfulTime` stands in.
 *
 *   BackupFailing  the newest finished run failed;
 *   BackupStale    no success since two scheduled runs came and went (2× the
 *                  schedule's interval): a CronJob that is suspended, cannot
 *                  start its pods, or whose runs keep failing all end here.
 */
import { metaTime } from '../../model/meta-time.js';
import { CronExpressionParser } from 'cron-parser';

export interface JobLike {
  readonly metadata: { readonly name: string };
  readonly status?: {
    readonly startTime?: string;
    readonly completionTime?: string;
    readonly conditions?: readonly { readonly type: string; readonly status: string; readonly lastTransitionTime?: string; readonly message?: string }[];
  };
}

export interface BackupObservation {
  readonly lastBackupTime?: string;
  readonly lastBackupFailureTime?: string;
  /** Start to completion of the newest successful Job, when its Job is still there. */
  readonly lastDurationSeconds?: number;
  readonly failing: { readonly status: boolean; readonly reason: string; readonly message: string };
  readonly stale: { readonly status: boolean; readonly reason: string; readonly message: string };
  /** When BackupStale turns True unless a backup succeeds first (ms since the epoch): the controller looks again then. */
  readonly staleAtMs?: number;
}

export interface BackupInput {
  readonly schedule: string;
  readonly cronJob: { readonly metadata: { readonly creationTimestamp?: string }; readonly status?: { readonly lastSuccessfulTime?: string } };
  readonly jobs: readonly JobLike[];
  readonly now: number;
}

interface Finished { readonly name: string; readonly at: string; readonly startedAt?: string; readonly succeeded: boolean; readonly message?: string }

/** The condition by which a Job says it ended, succeeded or failed; undefined while it runs. */
export function endCondition(job: JobLike): NonNullable<NonNullable<JobLike['status']>['conditions']>[number] | undefined {
  return (job.status?.conditions ?? []).find((c) => c.status === 'True' && (c.type === 'Complete' || c.type === 'Failed'));
}

function finished(job: JobLike): Finished | undefined {
  const done = endCondition(job);
  if (!done) return undefined;
  const at = done.type === 'Complete' ? job.status?.completionTime ?? done.lastTransitionTime : done.lastTransitionTime;
  return at ? { name: job.metadata.name, at, startedAt: job.status?.startTime, succeeded: done.type === 'Complete', message: done.message } : undefined;
}

const newest = (runs: readonly Finished[]): Finished | undefined => runs.reduce<Finished | undefined>((a, b) => (!a || Date.parse(b.at) > Date.parse(a.at) ? b : a), undefined);

export function observeBackups(input: BackupInput): BackupObservation {
  const runs = input.jobs.map(finished).filter((r): r is Finished => r !== undefined);
  const lastSuccess = newest(runs.filter((r) => r.succeeded));
  const lastFailure = newest(runs.filter((r) => !r.succeeded));
  const cronJobSuccess = input.cronJob.status?.lastSuccessfulTime;
  // The Jobs may have been pruned (history limits): the CronJob still remembers its last success.
  const lastBackupTime = [lastSuccess?.at, cronJobSuccess].filter((t): t is string => Boolean(t)).sort((a, b) => Date.parse(b) - Date.parse(a))[0];

  const latest = newest(runs);
  const failing = latest && !latest.succeeded
    ? { status: true, reason: 'LastRunFailed', message: `backup Job ${latest.name} failed at ${metaTime(latest.at)}${latest.message ? `: ${latest.message}` : ''}` }
    : { status: false, reason: latest ? 'LastRunSucceeded' : 'NoRunFinished', message: latest ? `backup Job ${latest.name} succeeded at ${metaTime(latest.at)}` : 'no backup run has finished yet' };

  // Measured from the last success, or from the CronJob's creation while there has been none.
  const since = lastBackupTime ?? input.cronJob.metadata.creationTimestamp;
  let stale: BackupObservation['stale'] = { status: false, reason: 'NoSchedule', message: 'no schedule to judge by' };
  let staleAtMs: number | undefined;
  if (since) {
    try {
      const after = CronExpressionParser.parse(input.schedule, { currentDate: new Date(Date.parse(since)), tz: 'UTC' });
      after.next();
      staleAtMs = after.next().getTime(); // the second scheduled run after the last success
      const what = lastBackupTime ? `the last successful backup at ${metaTime(lastBackupTime)}` : `the CronJob's creation at ${metaTime(since)}, with no successful backup yet`;
      stale = input.now >= staleAtMs
        ? { status: true, reason: 'NoRecentSuccess', message: `two scheduled runs (${input.schedule}) passed since ${what}` }
        : { status: false, reason: 'RecentSuccess', message: `${what}; stale from ${metaTime(staleAtMs)}` };
    } catch (e) {
      stale = { status: false, reason: 'NoSchedule', message: `the schedule cannot be read: ${(e as Error).message}` };
    }
  }
  const duration = lastSuccess?.startedAt ? (Date.parse(lastSuccess.at) - Date.parse(lastSuccess.startedAt)) / 1000 : undefined;
  return {
    ...(lastBackupTime ? { lastBackupTime: metaTime(lastBackupTime) } : {}),
    ...(duration !== undefined && duration >= 0 ? { lastDurationSeconds: duration } : {}),
    ...(lastFailure ? { lastBackupFailureTime: metaTime(lastFailure.at) } : {}),
    failing, stale,
    ...(staleAtMs !== undefined && !stale.status ? { staleAtMs } : {}),
  };
}
