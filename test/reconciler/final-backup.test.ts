/**
 * A deleting cluster's final backup, step by step (day2/final-backup.ts
 * decides, the core writes): the Job from the CronJob's template, a wait
 * that never outlasts the timeout, and a deletion that always goes on.
 */
import type { CachedObject } from '../../kube/informer.js';
import { decideFinalBackup, finalizerChange, type FinalBackupInput } from '../../reconciler/day2/final-backup.js';

const FINAL = { finalizer: 'dkv.example.com/final-backup', timeoutSeconds: 900, skipAnnotation: 'dkv.example.com/skip-final-backup' };
const DELETED_AT = Date.parse('2026-11-26T10:00:00Z');
const cluster = (annotations: Record<string, string> = {}) =>
  ({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders', namespace: 'shop', uid: 'uid-orders', annotations, finalizers: [FINAL.finalizer], deletionTimestamp: new Date(DELETED_AT).toISOString() } }) as unknown as CachedObject;
const cronJob = {
  apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'orders-backup', namespace: 'shop', uid: 'uid-cron' },
  spec: { jobTemplate: { metadata: { labels: { app: 'orders' }, annotations: { note: 'kept' } }, spec: { template: { spec: { containers: [{ name: 'backup', image: 'dkv' }] } } } } },
} as unknown as CachedObject;
const job = (status: unknown) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'orders-backup-final', namespace: 'shop' }, status }) as unknown as CachedObject;
const input = (over: Partial<FinalBackupInput> = {}): FinalBackupInput => ({ cluster: cluster(), final: FINAL, cronJob, job: () => undefined, now: DELETED_AT + 1000, ...over });

describe('the final backup of a deleting cluster', () => {
  it('starts a Job from the CronJob\'s own template, owned by the CronJob, and looks again soon', () => {
    const decision = decideFinalBackup(input());
    expect(decision).toEqual({
      kind: 'startJob', namespace: 'shop', requeueAfterMs: 5000,
      message: 'deleting: final backup Job orders-backup-final started; the deletion waits for it up to 900 s',
      job: {
        apiVersion: 'batch/v1', kind: 'Job',
        metadata: {
          name: 'orders-backup-final', namespace: 'shop', labels: { app: 'orders' }, annotations: { note: 'kept', 'cronjob.kubernetes.io/instantiate': 'manual' },
          ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'orders-backup', uid: 'uid-cron', controller: true }],
        },
        spec: { template: { spec: { containers: [{ name: 'backup', image: 'dkv' }] } } },
      },
    });
  });

  it('waits while the Job runs, never past the timeout', () => {
    expect(decideFinalBackup(input({ job: () => job({}) }))).toEqual({ kind: 'wait', requeueAfterMs: 5000 });
    expect(decideFinalBackup(input({ job: () => job({}), now: DELETED_AT + 900_000 - 2500 }))).toEqual({ kind: 'wait', requeueAfterMs: 2500 });
    expect(decideFinalBackup(input({ job: () => job({}), now: DELETED_AT + 900_000 - 10 }))).toEqual({ kind: 'wait', requeueAfterMs: 1000 });
  });

  it('lets the deletion go on once the Job completed', () => {
    expect(decideFinalBackup(input({ job: () => job({ conditions: [{ type: 'Complete', status: 'True' }], completionTime: '2026-11-26T10:02:00Z' }) }))).toEqual({
      kind: 'letGo', type: 'Normal', reason: 'FinalBackupTaken', message: 'final backup Job orders-backup-final completed at 2026-11-26T10:02:00Z',
    });
  });

  it('lets the deletion go on with a warning when the Job failed, there is no CronJob, or the timeout passed', () => {
    expect(decideFinalBackup(input({ job: () => job({ conditions: [{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }] }) }))).toEqual({
      kind: 'letGo', type: 'Warning', reason: 'FinalBackupFailed', message: 'final backup Job orders-backup-final failed: BackoffLimitExceeded; the deletion goes on without it',
    });
    expect(decideFinalBackup(input({ cronJob: undefined }))).toEqual({
      kind: 'letGo', type: 'Warning', reason: 'FinalBackupFailed', message: 'no backup CronJob to take the final backup with; the deletion goes on without one',
    });
    expect(decideFinalBackup(input({ job: () => job({}), now: DELETED_AT + 900_000 }))).toEqual({
      kind: 'letGo', type: 'Warning', reason: 'FinalBackupFailed', message: 'no final backup within 900 s of the deletion (Job orders-backup-final still running); the deletion goes on without it',
    });
  });

  it('takes no backup when the cluster is annotated to skip it', () => {
    expect(decideFinalBackup(input({ cluster: cluster({ [FINAL.skipAnnotation]: 'true' }) }))).toEqual({
      kind: 'letGo', type: 'Normal', reason: 'FinalBackupSkipped', message: 'deleted without a final backup (dkv.example.com/skip-final-backup: "true")',
    });
  });
});

describe('the final-backup finalizer', () => {
  const withFinalizers = (finalizers: string[]) => ({ metadata: { name: 'orders', finalizers } }) as unknown as CachedObject;
  it('is added while the cluster has backups, removed when they are turned off, and left alone otherwise', () => {
    expect(finalizerChange(withFinalizers([]), FINAL.finalizer, true)).toBe('add');
    expect(finalizerChange(withFinalizers(['other', FINAL.finalizer]), FINAL.finalizer, false)).toBe('remove');
    expect(finalizerChange(withFinalizers([FINAL.finalizer]), FINAL.finalizer, true)).toBeUndefined();
    expect(finalizerChange(withFinalizers(['other']), FINAL.finalizer, false)).toBeUndefined();
  });
});
