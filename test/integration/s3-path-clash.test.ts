/**
 * A cluster's s3Path is its own folder: against a real kube-apiserver, the
 * controller refuses a cluster whose folder another cluster backs up into,
 * or that lies inside or around another's (Degraded/S3PathClash, nothing
 * written), and the one that keeps the folder goes on as before. The newer
 * cluster is refused, except that a cluster whose backups already go there
 * keeps its folder when an older one moves onto it. A refused cluster goes
 * ahead once its rival moves away or is gone.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { createNamespace, describeWithCluster, installCrd, testClient, untilGone } from '../cluster/kube.js';
import { clusterPath, config, converged, createCluster, eventsFor, startController, type RunningController, degradedCondition, degradedWith as degradedWithReason, objectExists } from './controller-harness.js';

/** The harness runs the generic engine, whose backups name their runner. */
const spec = (s3Path: string) => ({ size: 3, image: 'kv:1', backup: { s3Path, schedule: '0 2 * * *', backupImage: 'kv-backup:1' } });
/** No final backup Job on deletion: this plane runs no Job controller. */
const SKIP_FINAL = { [config.backup.final.skipAnnotation]: 'true' };
const WITH_BACKUP = 6; // StatefulSet, two Services, PodDisruptionBudget, NetworkPolicy, CronJob
const mergePatch = 'application/merge-patch+json';
const degraded = degradedCondition;

describeWithCluster('the controller refuses a second cluster backing up into one s3Path', () => {
  let client: KubeClient;
  let running: RunningController | undefined;

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });
  afterAll(() => client?.close());

  const get = (apiVersion: string, kind: string, namespace: string, name: string): Promise<any> => client.request('GET', resourcePath(apiVersion, kind, namespace, name));
  const exists = (apiVersion: string, kind: string, namespace: string, name: string): Promise<boolean> => objectExists(client, apiVersion, kind, namespace, name);
  const degradedWith = (namespace: string, name: string, reason: string): Promise<any> => degradedWithReason(client, namespace, name, reason);
  const s3PathOfCronJob = async (namespace: string, name: string): Promise<string> =>
    (await get('batch/v1', 'CronJob', namespace, `${name}-backup`)).spec.jobTemplate.spec.template.spec.containers[0].env.find((e: any) => e.name === 'DKV_S3_PATH').value;
  const errors = async (): Promise<number> => (await running!.controller.metrics.reconciles.get()).values.find((v) => v.labels.result === 'error')?.value ?? 0;

  it('refuses the newer of two clusters with one s3Path, and one whose s3Path lies inside the other\'s: nothing written for them, the older untouched; once the older is gone, the inner one goes ahead', async () => {
    const namespace = await createNamespace(client, 's3-clash');
    running = await startController(client, namespace);
    await createCluster(client, namespace, 'orders', spec('s3://dkv-test/shop'), SKIP_FINAL);
    const older = await converged(client, namespace, 'orders', WITH_BACKUP);
    const cronJob = await get('batch/v1', 'CronJob', namespace, 'orders-backup');

    await createCluster(client, namespace, 'carts', spec('s3://dkv-test/shop/'));
    const same = await degradedWith(namespace, 'carts', 'S3PathClash');
    expect(degraded(same)!.message).toBe(`spec.backup.s3Path: this cluster would back up into s3://dkv-test/shop, the folder DistributedKV ${namespace}/orders backs up into too, which keeps it: `
      + 'an s3Path is one cluster\'s own folder, and each cluster\'s retention would count and delete the other\'s backups; give this cluster a folder apart from every other\'s');
    // The folder of orders' legacy backups (<s3Path>/<namespace>/<name>/) is inside its own: refused too.
    await createCluster(client, namespace, 'inner', spec(`s3://dkv-test/shop/${namespace}/orders`));
    const inside = await degradedWith(namespace, 'inner', 'S3PathClash');
    expect(degraded(inside)!.message).toContain(`would back up into s3://dkv-test/shop/${namespace}/orders, inside s3://dkv-test/shop, the folder DistributedKV ${namespace}/orders backs up into, which keeps it`);

    for (const name of ['carts', 'inner']) {
      expect(await exists('apps/v1', 'StatefulSet', namespace, name)).toBe(false);
      expect(await exists('batch/v1', 'CronJob', namespace, `${name}-backup`)).toBe(false);
      expect((await eventsFor(client, namespace, name)).filter((e) => e.reason === 'S3PathClash')).toHaveLength(1);
    }
    expect((await get('batch/v1', 'CronJob', namespace, 'orders-backup')).metadata.resourceVersion).toBe(cronJob.metadata.resourceVersion);
    const olderNow = await client.request('GET', clusterPath(namespace, 'orders'));
    expect(degraded(olderNow)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    expect(olderNow.status.generatedObjects).toEqual(older.status.generatedObjects);
    // Refused for good, not retried hot: a change to either cluster brings it back.
    expect(await errors()).toBe(0);

    // A folder of its own: carts goes ahead.
    await client.request('PATCH', clusterPath(namespace, 'carts'), { body: { spec: { backup: { s3Path: 's3://dkv-test/carts' } } }, contentType: mergePatch });
    await converged(client, namespace, 'carts', WITH_BACKUP);
    expect(await s3PathOfCronJob(namespace, 'carts')).toBe('s3://dkv-test/carts');
    // orders gone: its folder is free, and inner, refused for lying inside it, goes ahead without a change of its own.
    await client.request('DELETE', clusterPath(namespace, 'orders'));
    await untilGone(client, clusterPath(namespace, 'orders'), 'orders', 30_000, 200);
    const freed = await converged(client, namespace, 'inner', WITH_BACKUP);
    expect(degraded(freed)).toMatchObject({ status: 'False', reason: 'AsExpected' });
  }, 120_000);

  it('keeps a folder for the cluster whose backups go there when an older cluster moves onto it: the older one is refused, its CronJob untouched', async () => {
    const namespace = await createNamespace(client, 's3-move');
    running = await startController(client, namespace);
    await createCluster(client, namespace, 'a-older', spec('s3://dkv-test/older'));
    await converged(client, namespace, 'a-older', WITH_BACKUP);
    await createCluster(client, namespace, 'b-newer', spec('s3://dkv-test/newer'));
    await converged(client, namespace, 'b-newer', WITH_BACKUP);
    const newerCronJob = await get('batch/v1', 'CronJob', namespace, 'b-newer-backup');
    const olderCronJob = await get('batch/v1', 'CronJob', namespace, 'a-older-backup');

    await client.request('PATCH', clusterPath(namespace, 'a-older'), { body: { spec: { backup: { s3Path: 's3://dkv-test/newer' } } }, contentType: mergePatch });
    const refused = await degradedWith(namespace, 'a-older', 'S3PathClash');
    expect(degraded(refused)!.message).toContain(`the folder DistributedKV ${namespace}/b-newer backs up into too, which keeps it`);
    expect((await get('batch/v1', 'CronJob', namespace, 'a-older-backup')).metadata.resourceVersion).toBe(olderCronJob.metadata.resourceVersion);
    expect(await s3PathOfCronJob(namespace, 'a-older')).toBe('s3://dkv-test/older');
    expect((await get('batch/v1', 'CronJob', namespace, 'b-newer-backup')).metadata.resourceVersion).toBe(newerCronJob.metadata.resourceVersion);
    expect(degraded(await client.request('GET', clusterPath(namespace, 'b-newer')))).toMatchObject({ status: 'False', reason: 'AsExpected' });
    expect(await errors()).toBe(0);
  }, 120_000);
});
