// Slow: real kube-controller-manager controllers (StatefulSet, Job, CronJob) act on what the reconciler creates, and each check waits for them (about 1 minute under load).
/**
 * The DistributedKV status tells the truth when real controllers act on what
 * the reconciler creates: kube-controller-manager (StatefulSet, Job, CronJob,
 * PV binder, garbage collector), kube-scheduler and kwok's fake nodes, whose
 * pods become Ready and whose Job pods succeed. No fixed sleeps: every wait is
 * a poll with a deadline. The backup test waits for a real minute boundary of
 * the `* * * * *` schedule, so it takes up to ~70 s.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { requestCounts } from '../cluster/apiserver-metrics.js';
import type { ControlPlane } from '../cluster/control-plane.js';
import { createNamespace, describeWithCluster, eventually } from '../cluster/kube.js';
import { clusterPath, converged, createCluster, startController, startPlaneWithNodes, type RunningController } from './controller-harness.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';

const mergePatch = 'application/merge-patch+json';

const SIZE = 3;
const SPEC = {
  size: SIZE,
  image: 'registry.example.com/kv/server:1.4.2',
  backup: { s3Path: 's3://dkv-test/truth', schedule: '* * * * *', backupImage: 'kv-backup:1' },
};
/** StatefulSet, headless and client Services, PodDisruptionBudget, NetworkPolicy, backup CronJob. */
const GENERATED = 6;

const condition = (cr: any, type: string): { status: string; reason: string } | undefined => cr.status?.conditions?.find((c: any) => c.type === type);

describeWithCluster('status with real controllers, a scheduler and kwok nodes', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let namespace: string;
  let running: RunningController | undefined;
  /** Lists one resource in the test's namespace, by plural (resourcePath knows only the kinds this project reads or writes, not claims). */
  const list = async (apiVersion: string, plural: string): Promise<any[]> =>
    (await client.request('GET', `${apiVersion.includes('/') ? '/apis' : '/api'}/${apiVersion}/namespaces/${namespace}/${plural}`)).items;

  beforeAll(async () => {
    ({ plane, client, namespace } = await startPlaneWithNodes('truth'));
    running = await startController(client, namespace);
    await createCluster(client, namespace, 'kv', SPEC);
  }, 120_000 + LATER_BINARIES_BUILD_MS);
  afterAll(async () => {
    await running?.stop();
    client?.close();
    await plane?.stop();
  });

  it('reaches readyReplicas = size, Available, not Progressing, not Degraded — once the pods really are Ready', async () => {
    await converged(client, namespace, 'kv', GENERATED);
    const cr = await eventually('the status to report every member ready', async () => {
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      const ok = current.status?.readyReplicas === SIZE
        && condition(current, 'Available')?.status === 'True'
        && condition(current, 'Progressing')?.status === 'False'
        && condition(current, 'Degraded')?.status === 'False';
      return ok ? current : undefined;
    }, 90_000, 200);
    expect(condition(cr, 'Available')?.reason).toBe('QuorumAvailable');
    expect(condition(cr, 'Progressing')?.reason).toBe('Reconciled');
    expect(condition(cr, 'Degraded')?.reason).toBe('AsExpected');
    expect(cr.status.observedGeneration).toBe(cr.metadata.generation);

    // The claim matches the world: the StatefulSet controller counts 3 ready pods,
    // the scheduler put one on each node (the topology spread), their volumes are bound.
    const sts = await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, 'kv'));
    expect(sts.status.readyReplicas).toBe(SIZE);
    const pods = (await list('v1', 'pods')).filter((p) => p.metadata.ownerReferences?.some((o: any) => o.kind === 'StatefulSet'));
    expect(pods).toHaveLength(SIZE);
    for (const pod of pods) {
      expect(pod.status.phase).toBe('Running');
      expect(pod.status.conditions.find((c: any) => c.type === 'Ready')?.status).toBe('True');
    }
    expect(new Set(pods.map((p) => p.spec.nodeName))).toEqual(new Set(plane.nodes!.nodeNames));
    const claims = await list('v1', 'persistentvolumeclaims');
    expect(claims).toHaveLength(SIZE);
    for (const claim of claims) expect(claim.status.phase).toBe('Bound');
  }, 120_000);

  it('still tells the truth about the running members when the spec turns invalid: readyReplicas, Available, and Degraded/InvalidSpec', async () => {
    await client.request('PATCH', clusterPath(namespace, 'kv'), { body: { spec: { backup: { schedule: '5-3 * * * *' } } }, contentType: mergePatch });
    // Right after the members were seen ready (the test before): a refused spec must keep reporting them.
    // Before this was fixed, it reported 0 ready members and Available=False for a healthy cluster.
    let last: unknown;
    const cr = await eventually('Degraded/InvalidSpec for the new generation, with every running member reported ready', async () => {
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      const live = await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, 'kv'));
      last = { generation: current.metadata.generation, status: current.status, statefulSet: live.status };
      const refused = condition(current, 'Degraded')?.reason === 'InvalidSpec' && current.status.observedGeneration === current.metadata.generation;
      return refused && current.status.readyReplicas === SIZE ? current : undefined;
    }, 60_000, 200).catch((e: Error) => {
      throw new Error(`${e.message}; last seen: ${JSON.stringify(last)}`);
    });
    expect(condition(cr, 'Available')).toMatchObject({ status: 'True', reason: 'QuorumAvailable' });
    const sts = await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, 'kv'));
    expect(sts.status.readyReplicas).toBe(SIZE);
    expect(cr.status.generatedObjects).toHaveLength(GENERATED);

    await client.request('PATCH', clusterPath(namespace, 'kv'), { body: { spec: { backup: { schedule: '* * * * *' } } }, contentType: mergePatch });
    await eventually('Degraded to clear', async () => {
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      return condition(current, 'Degraded')?.status === 'False' && current.status.observedGeneration === current.metadata.generation ? true : undefined;
    }, 30_000, 200);
  }, 120_000);

  it('sets lastBackupTime from the CronJob once a backup Job has succeeded', async () => {
    const cr = await eventually('lastBackupTime to be set', async () => {
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      return current.status?.lastBackupTime ? current : undefined;
    }, 150_000, 500);
    const backupTime = Date.parse(cr.status.lastBackupTime);
    expect(Number.isNaN(backupTime)).toBe(false);

    // It is the CronJob's own record of a Job that really completed (kwok's pod-complete stage).
    const cronJobs = await list('batch/v1', 'cronjobs');
    expect(cronJobs).toHaveLength(1);
    await eventually('status.lastBackupTime to equal the CronJob\'s lastSuccessfulTime', async () => {
      const [cronJob] = await list('batch/v1', 'cronjobs');
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      return cronJob.status?.lastSuccessfulTime && cronJob.status.lastSuccessfulTime === current.status?.lastBackupTime ? true : undefined;
    }, 30_000, 200);
    const jobs = await list('batch/v1', 'jobs');
    const succeeded = jobs.filter((j) => j.status?.succeeded >= 1 && j.metadata.ownerReferences?.some((o: any) => o.kind === 'CronJob' && o.uid === cronJobs[0].metadata.uid));
    expect(succeeded.length).toBeGreaterThan(0);
    // The Jobs themselves say the same: the newest success is the last backup, the last run did not fail, nothing is stale.
    const settled = await eventually('the backup conditions to describe the newest Job', async () => {
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      const newest = (await list('batch/v1', 'jobs')).map((j) => j.status?.completionTime).filter(Boolean).sort().at(-1);
      return newest && current.status?.lastBackupTime === newest ? current : undefined;
    }, 30_000, 200);
    const conditionOf = (type: string) => settled.status.conditions.find((c: any) => c.type === type);
    expect(conditionOf('BackupFailing')).toMatchObject({ status: 'False', reason: 'LastRunSucceeded' });
    expect(conditionOf('BackupStale')).toMatchObject({ status: 'False', reason: 'RecentSuccess' });
    expect(settled.status).not.toHaveProperty('lastBackupFailureTime');
    // The same fact for Prometheus: the completion as a timestamp (alert on time() minus it), and how long the run took.
    const gauge = async (name: 'backupLastSuccess' | 'backupLastDuration') => (await running!.controller.metrics[name].get()).values.find((v) => v.labels.name === 'kv' && v.labels.namespace === namespace)?.value;
    expect(await gauge('backupLastSuccess')).toBe(Date.parse(settled.status.lastBackupTime) / 1000);
    expect(await gauge('backupLastDuration')).toBeGreaterThanOrEqual(0);
    const jobPods = (await list('v1', 'pods')).filter((p) => p.metadata.ownerReferences?.some((o: any) => o.kind === 'Job'));
    expect(jobPods.some((p) => p.status.phase === 'Succeeded')).toBe(true);
  }, 180_000);

  it('drops lastBackupTime once backup is removed, and then writes no status on further reconciles', async () => {
    await client.request('PATCH', clusterPath(namespace, 'kv'), { body: { spec: { backup: null } }, contentType: mergePatch });
    await eventually('lastBackupTime to disappear with the CronJob', async () => {
      const current = await client.request('GET', clusterPath(namespace, 'kv'));
      const { observedGeneration, lastBackupTime, generatedObjects } = current.status;
      return observedGeneration === current.metadata.generation && lastBackupTime === undefined && generatedObjects.length === GENERATED - 1 ? true : undefined;
    }, 30_000, 200);
    const backupGauges = (await running!.controller.metrics.backupLastSuccess.get()).values.filter((v) => v.labels.namespace === namespace);
    expect(backupGauges).toEqual([]);

    // Three reconciles, each brought about by a metadata change the controller acts on (an annotation), write no status.
    const statusWrites = async () => (await requestCounts(client)).get('PATCH distributedkvs/status') ?? 0;
    const reconciles = async () => (await running!.controller.metrics.reconciles.get()).values.reduce((n, v) => n + v.value, 0);
    await eventually('the controller to be idle', async () => (running!.controller.idle ? true : undefined));
    const writesBefore = await statusWrites();
    for (let i = 0; i < 3; i++) {
      const before = await reconciles();
      await client.request('PATCH', clusterPath(namespace, 'kv'), { body: { metadata: { annotations: { 'example.com/poke': String(i) } } }, contentType: mergePatch });
      await eventually('a reconcile', async () => ((await reconciles()) > before ? true : undefined));
    }
    expect(await statusWrites()).toBe(writesBefore);
  }, 60_000);

  it('leaves nothing behind when the cluster is deleted: the garbage collector follows the owner references', async () => {
    // Only kube-controller-manager acts: the controller is stopped, and no finalizer waits for it.
    await running!.stop();
    running = undefined;
    expect((await client.request('GET', clusterPath(namespace, 'kv'))).metadata.finalizers ?? []).toEqual([]);
    expect((await list('v1', 'pods')).length).toBeGreaterThanOrEqual(SIZE);
    await client.request('DELETE', clusterPath(namespace, 'kv'));

    const resources: Array<[string, string]> = [
      ['apps/v1', 'statefulsets'], ['v1', 'services'], ['policy/v1', 'poddisruptionbudgets'], ['batch/v1', 'cronjobs'], ['batch/v1', 'jobs'], ['v1', 'pods'],
    ];
    await eventually('every generated object and its dependents to be garbage-collected', async () => {
      const left: string[] = [];
      for (const [apiVersion, plural] of resources) for (const o of await list(apiVersion, plural)) left.push(`${plural}/${o.metadata.name}`);
      if (left.length > 0) throw new Error(`still there: ${left.join(', ')}`);
      return true;
    }, 90_000, 250);
  }, 120_000);

  it('lets a namespace holding a cluster be deleted while no controller runs', async () => {
    const other = await createNamespace(client, 'truth-ns');
    const controller = await startController(client, other);
    try {
      await createCluster(client, other, 'kv', { size: 1, image: 'registry.example.com/kv/server:1.4.2' });
      await converged(client, other, 'kv', GENERATED - 1);
    } finally {
      await controller.stop();
    }
    await client.request('DELETE', `/api/v1/namespaces/${other}`);
    await eventually(`namespace ${other} to be deleted by the namespace controller`, async () => {
      try {
        await client.request('GET', `/api/v1/namespaces/${other}`);
        return undefined;
      } catch (e) {
        return (e as { status?: number }).status === 404 ? true : undefined;
      }
    }, 90_000, 250);
  }, 120_000);
});
