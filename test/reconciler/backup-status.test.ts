/**
 * What the backups of a cluster did, from its CronJob and the Jobs it ran
 * (pure; the pitfalls are in ../shared/notes/day2-operations.md §3).
 */
import { observeBackups, type JobLike } from '../../reconciler/day2/backup-status.js';

const at = (iso: string) => Date.parse(iso);
const cronJob = (over: { created?: string; lastSuccessfulTime?: string } = {}) => ({
  metadata: { creationTimestamp: over.created ?? '2026-11-20T00:00:00Z' },
  status: over.lastSuccessfulTime ? { lastSuccessfulTime: over.lastSuccessfulTime } : {},
});
const succeeded = (name: string, completed: string, started?: string): JobLike => ({
  metadata: { name }, status: { startTime: started, completionTime: completed, conditions: [{ type: 'SuccessCriteriaMet', status: 'True', lastTransitionTime: completed }, { type: 'Complete', status: 'True', lastTransitionTime: completed }] },
});
const failed = (name: string, ended: string, message = 'BackoffLimitExceeded'): JobLike => ({
  metadata: { name }, status: { conditions: [{ type: 'FailureTarget', status: 'True', lastTransitionTime: ended }, { type: 'Failed', status: 'True', lastTransitionTime: ended, message }] },
});
const running = (name: string): JobLike => ({ metadata: { name }, status: {} });
const DAILY = '0 2 * * *';

describe('what the backups did', () => {
  it('takes lastBackupTime from the newest Job that succeeded, not from one that failed or is still running', () => {
    const seen = observeBackups({
      schedule: DAILY, cronJob: cronJob({ lastSuccessfulTime: '2026-11-21T02:00:30Z' }), now: at('2026-11-23T09:00:00Z'),
      jobs: [succeeded('kv-backup-1', '2026-11-21T02:00:30Z'), succeeded('kv-backup-2', '2026-11-22T02:00:40Z'), failed('kv-backup-3', '2026-11-23T02:01:00Z'), running('kv-backup-4')],
    });
    expect(seen.lastBackupTime).toBe('2026-11-22T02:00:40Z');
    expect(seen.lastBackupFailureTime).toBe('2026-11-23T02:01:00Z');
    expect(seen.failing).toEqual({ status: true, reason: 'LastRunFailed', message: 'backup Job kv-backup-3 failed at 2026-11-23T02:01:00Z: BackoffLimitExceeded' });
    expect(seen.stale.status).toBe(false);
  });

  it('falls back to the CronJob\'s lastSuccessfulTime when the Job history was pruned', () => {
    const seen = observeBackups({ schedule: DAILY, cronJob: cronJob({ lastSuccessfulTime: '2026-11-23T02:00:30Z' }), jobs: [], now: at('2026-11-23T09:00:00Z') });
    expect(seen.lastBackupTime).toBe('2026-11-23T02:00:30Z');
    expect(seen.failing).toMatchObject({ status: false, reason: 'NoRunFinished' });
  });

  it('is failing only while the newest finished run failed: a success after a failure clears it', () => {
    const seen = observeBackups({
      schedule: DAILY, cronJob: cronJob(), now: at('2026-11-23T09:00:00Z'),
      jobs: [failed('kv-backup-1', '2026-11-22T02:01:00Z'), succeeded('kv-backup-2', '2026-11-23T02:00:40Z')],
    });
    expect(seen.failing).toMatchObject({ status: false, reason: 'LastRunSucceeded' });
    expect(seen.lastBackupFailureTime).toBe('2026-11-22T02:01:00Z');
  });

  it('is stale once two scheduled runs passed since the last success, and says when it will be', () => {
    const input = { schedule: DAILY, cronJob: cronJob(), jobs: [succeeded('kv-backup-1', '2026-11-21T02:00:40Z')] };
    // Runs due 2026-11-22T02:00 and 2026-11-23T02:00: stale from the second.
    const before = observeBackups({ ...input, now: at('2026-11-23T01:59:59Z') });
    expect(before.stale).toMatchObject({ status: false, reason: 'RecentSuccess' });
    expect(before.staleAtMs).toBe(at('2026-11-23T02:00:00Z'));
    const after = observeBackups({ ...input, now: at('2026-11-23T02:00:00Z') });
    expect(after.stale).toEqual({ status: true, reason: 'NoRecentSuccess', message: `two scheduled runs (${DAILY}) passed since the last successful backup at 2026-11-21T02:00:40Z` });
    expect(after.staleAtMs).toBeUndefined();
  });

  it('judges a cluster that never had a success from its CronJob\'s creation', () => {
    const input = { schedule: '*/5 * * * *', cronJob: cronJob({ created: '2026-11-23T09:01:00Z' }), jobs: [failed('kv-backup-1', '2026-11-23T09:05:30Z')] };
    expect(observeBackups({ ...input, now: at('2026-11-23T09:09:59Z') }).stale.status).toBe(false);
    expect(observeBackups({ ...input, now: at('2026-11-23T09:10:00Z') }).stale).toMatchObject({ status: true, message: expect.stringContaining("the CronJob's creation at 2026-11-23T09:01:00Z, with no successful backup yet") });
  });

  it('measures the newest success from its Job\'s start to its completion, and says nothing once that Job is pruned', () => {
    const withJob = observeBackups({ schedule: DAILY, cronJob: cronJob(), jobs: [succeeded('kv-backup-1', '2026-11-23T02:00:42Z', '2026-11-23T02:00:01Z')], now: at('2026-11-23T09:00:00Z') });
    expect(withJob.lastDurationSeconds).toBe(41);
    const pruned = observeBackups({ schedule: DAILY, cronJob: cronJob({ lastSuccessfulTime: '2026-11-23T02:00:42Z' }), jobs: [], now: at('2026-11-23T09:00:00Z') });
    expect(pruned.lastDurationSeconds).toBeUndefined();
  });
});
