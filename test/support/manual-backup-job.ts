/**
 * A backup Job started by hand from a cluster's backup CronJob (what
 * `kubectl create job --from=cronjob/<name>` makes): the CronJob's job
 * template, owned by the CronJob, so the controller counts it among the
 * cluster's backups. The tests that need a backup metric use it instead of
 * waiting for a schedule; kwok's stages (or a test-side loop) run it.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import { eventually } from './eventually.js';

/** Waits for the cluster's backup CronJob, then creates `<cronjob>-manual` from it. */
export async function startManualBackupJob(client: KubeClient, namespace: string, identity: ClusterIdentity): Promise<void> {
  const cronJob = await eventually('the backup CronJob', () => client.request('GET', resourcePath('batch/v1', 'CronJob', namespace, identity.backupCronJobName)).catch(() => undefined), 30_000, 200);
  await client.request('POST', resourcePath('batch/v1', 'Job', namespace), {
    body: {
      apiVersion: 'batch/v1', kind: 'Job',
      metadata: {
        name: `${identity.backupCronJobName}-manual`, labels: cronJob.spec.jobTemplate.metadata?.labels ?? cronJob.metadata.labels,
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: cronJob.metadata.name, uid: cronJob.metadata.uid, controller: true }],
      },
      spec: cronJob.spec.jobTemplate.spec,
    },
  });
}
