/**
 * The final backup, on real components: kube-controller-manager (Job and
 * CronJob controllers, garbage collection), kube-scheduler and kwok nodes,
 * whose pod stages complete a Job's pods (no component here runs the
 * runner's container; kwok plays the kubelet that reports it done).
 */
import type { KubeClient } from '../../kube/client.js';
import type { ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually, untilGone } from '../cluster/kube.js';
import { clusterPath, config, converged, createCluster, startController, startPlaneWithNodes, type RunningController } from './controller-harness.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';

const SPEC = { size: 3, image: 'kv:1', backup: { s3Path: 's3://dkv-test/final', schedule: '0 2 * * *', backupImage: 'kv-backup:1' } };
const FINALIZER = config.backup.final.finalizer;

describeWithCluster('a final backup before a cluster with backups is deleted', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let namespace: string;
  let running: RunningController | undefined;

  const events = async (reason: string): Promise<string[]> =>
    (await client.request('GET', `/api/v1/namespaces/${namespace}/events`)).items.filter((e: any) => e.reason === reason).map((e: any) => e.message);
  const jobs = async () => (await client.request('GET', `/apis/batch/v1/namespaces/${namespace}/jobs`)).items as any[];
  const gone = (name: string) => untilGone(client, clusterPath(namespace, name), name, 60_000, 200);
  const withFinalizer = (name: string) => eventually(`${name} to hold the final-backup finalizer`, async () => {
    const cr = await client.request('GET', clusterPath(namespace, name));
    return (cr.metadata.finalizers ?? []).includes(FINALIZER) ? cr : undefined;
  }, 30_000, 200);

  beforeAll(async () => {
    ({ plane, client, namespace } = await startPlaneWithNodes('final'));
    running = await startController(client, namespace);
  }, 180_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await running?.stop();
    client?.close();
    await plane?.stop();
  });

  it('runs a Job from the CronJob\'s own template, waits for it, then lets the deletion go on', async () => {
    await createCluster(client, namespace, 'kv', SPEC);
    await converged(client, namespace, 'kv', 6, 60_000);
    await withFinalizer('kv');
    const [cronJob] = (await client.request('GET', `/apis/batch/v1/namespaces/${namespace}/cronjobs`)).items;

    await client.request('DELETE', clusterPath(namespace, 'kv'));
    // Seen while the deletion waits: once the cluster is gone, the garbage collector takes the CronJob and its Jobs.
    const job = await eventually('the final backup Job', async () => (await jobs()).find((j) => j.metadata.name === 'kv-backup-final'), 30_000, 50);
    await gone('kv');
    // The same runner with the same environment as every scheduled backup, owned by the CronJob like them.
    expect(job.spec.template.spec.containers).toEqual(cronJob.spec.jobTemplate.spec.template.spec.containers);
    expect(job.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'CronJob', uid: cronJob.metadata.uid, controller: true })]);
    expect(await events('FinalBackupStarted')).toEqual([expect.stringContaining('final backup Job kv-backup-final started')]);
    expect(await events('FinalBackupTaken')).toEqual([expect.stringContaining('final backup Job kv-backup-final completed at')]);
  }, 120_000);

  it('deletes a cluster annotated to skip it without a Job', async () => {
    await createCluster(client, namespace, 'skipped', SPEC, { [config.backup.final.skipAnnotation]: 'true' });
    await withFinalizer('skipped');
    await client.request('DELETE', clusterPath(namespace, 'skipped'));
    await gone('skipped');
    expect((await jobs()).filter((j) => j.metadata.name === 'skipped-backup-final')).toEqual([]);
    expect(await events('FinalBackupSkipped')).toEqual([expect.stringContaining('deleted without a final backup')]);
  }, 60_000);

  it('drops the finalizer when backups are turned off', async () => {
    await createCluster(client, namespace, 'turned-off', SPEC);
    await withFinalizer('turned-off');
    await client.request('PATCH', clusterPath(namespace, 'turned-off'), { body: { spec: { backup: null } }, contentType: 'application/merge-patch+json' });
    await eventually('the finalizer to go', async () => {
      const cr = await client.request('GET', clusterPath(namespace, 'turned-off'));
      return (cr.metadata.finalizers ?? []).includes(FINALIZER) ? undefined : true;
    }, 30_000, 200);
  }, 60_000);

  it('never blocks a deletion forever: past the timeout it goes on, with a Warning Event', async () => {
    await running!.stop();
    running = await startController(client, namespace, { config: { ...config, backup: { ...config.backup, final: { ...config.backup.final, timeoutSeconds: 0 } } } });
    await createCluster(client, namespace, 'late', SPEC);
    await withFinalizer('late');
    await client.request('DELETE', clusterPath(namespace, 'late'));
    await gone('late');
    expect(await events('FinalBackupFailed')).toEqual([expect.stringContaining('no final backup within 0 s of the deletion')]);
  }, 60_000);
});
