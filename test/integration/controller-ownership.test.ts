/**
 * The controller writes only what is its own, against a real kube-apiserver:
 * an application's object that shares a generated name, another cluster's
 * object, a configuration change a running StatefulSet cannot take, and a
 * field another writer keeps changing are all refused or left alone, and
 * reported in the cluster's Degraded condition with who is in the way.
 */
import type { GeneratorConfig } from '../../api/config.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient } from '../cluster/kube.js';
import { clusterPath, config, converged, createCluster, eventsFor, startController, type RunningController, degradedCondition, degradedWith as degradedWithReason, objectExists } from './controller-harness.js';

const SPEC = { size: 3, image: 'kv:1' };
const mergePatch = 'application/merge-patch+json';
const degraded = degradedCondition;

describeWithCluster('the controller takes nothing that is not its own', () => {
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
  const events = async (namespace: string, name: string, reason: string): Promise<any[]> => (await eventsFor(client, namespace, name)).filter((e) => e.reason === reason);
  const reconciles = async (r: RunningController): Promise<number> => (await r.controller.metrics.reconciles.get()).values.reduce((n, v) => n + v.value, 0);
  /** Runs `action`, then waits until the controller has reconciled `n` more times: a refusal that repeats is seen repeating. */
  const afterReconciles = async (r: RunningController, n: number, action: () => Promise<unknown> = async () => undefined): Promise<void> => {
    const start = await reconciles(r);
    await action();
    await eventually(`${n} more reconciles`, async () => ((await reconciles(r)) >= start + n ? true : undefined));
  };

  it('refuses to take over an application\'s Service of the same name: Degraded/ObjectConflict naming its writer, the Service untouched; created once it is gone', async () => {
    const namespace = await createNamespace(client, 'own-app');
    const appService = {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'orders', namespace },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    };
    const before = await client.apply<any>(appService, { fieldManager: 'kubectl' });
    running = await startController(client, namespace, { objectConflictRecheckMs: 200 });
    await createCluster(client, namespace, 'orders', SPEC);

    const cr = await degradedWith(namespace, 'orders', 'ObjectConflict');
    expect(degraded(cr)!.message).toContain('Service/orders already exists and is not this cluster\'s');
    expect(degraded(cr)!.message).toContain('kubectl');
    // It keeps looking (the Service is not in its cache, so nothing else would tell it), and says so once.
    await afterReconciles(running, 3);
    const after = await get('v1', 'Service', namespace, 'orders');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.metadata.ownerReferences).toBeUndefined();
    expect(after.spec.selector).toEqual({ app: 'web' });
    expect(after.spec.ports.map((p: any) => p.port)).toEqual([80]);
    expect(await events(namespace, 'orders', 'ObjectConflict')).toHaveLength(1);
    // Its own objects do not wait for the one in the way.
    expect(await exists('apps/v1', 'StatefulSet', namespace, 'orders')).toBe(true);
    const listed = (await client.request('GET', clusterPath(namespace, 'orders'))).status.generatedObjects;
    expect(listed.find((g: any) => g.kind === 'Service' && g.name === 'orders').uid).toBeUndefined();

    await client.request('DELETE', resourcePath('v1', 'Service', namespace, 'orders'));
    const fixed = await converged(client, namespace, 'orders', 5);
    expect(degraded(fixed)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    const ours = await get('v1', 'Service', namespace, 'orders');
    expect(ours.metadata.ownerReferences[0]).toMatchObject({ kind: 'DistributedKV', name: 'orders', uid: fixed.metadata.uid });
  });

  // A new cluster's objects are not in the cache (it holds only objects with our labels; a shard's, only its buckets'):
  // each is created only if absent (create-if-absent.ts), so nothing is read first, and an object of that name that
  // nothing here watches is found by the create's refusal.
  it.each([{ mode: 'single leader', sharded: false }, { mode: 'shard', sharded: true }])('as a $mode, reads nothing before creating, and the API server refuses the create of a name an application\'s Service holds: Degraded/ObjectConflict, the Service untouched', async ({ sharded }) => {
    const namespace = await createNamespace(client, sharded ? 'own-shard' : 'own-unread');
    // Every read of one named object in the namespace the controller makes, by path (lists and watches are not counted).
    const reads: string[] = [];
    const namedObject = new RegExp(`/namespaces/${namespace}/[a-z]+/[^/]+$`);
    const counting = Object.create(client, {
      request: {
        value: (method: string, path: string, options?: object) => {
          if (method === 'GET' && namedObject.test(path)) reads.push(path);
          return client.request(method, path, options);
        },
      },
    }) as KubeClient;
    running = await startController(counting, namespace, { sharded, objectConflictRecheckMs: 200 });
    await createCluster(client, namespace, 'kv', SPEC);
    await converged(client, namespace, 'kv', 5);
    expect(reads.filter((p) => !p.includes('/distributedkvs/'))).toEqual([]);

    // Created after the controller started, and outside its caches (no generated labels): only the create's refusal shows it.
    const appService = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'shop', namespace }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80 }] } };
    const before = await client.apply<any>(appService, { fieldManager: 'kubectl' });
    await createCluster(client, namespace, 'shop', SPEC);
    const cr = await degradedWith(namespace, 'shop', 'ObjectConflict');
    expect(degraded(cr)!.message).toContain('Service/shop already exists and is not this cluster\'s');
    expect(degraded(cr)!.message).toContain('kubectl');
    // Read once refused (and again at each recheck, not created again); the cluster's other objects were created unread.
    expect(new Set(reads.filter((p) => !p.includes('/distributedkvs/')))).toEqual(new Set([resourcePath('v1', 'Service', namespace, 'shop')]));
    expect(await exists('apps/v1', 'StatefulSet', namespace, 'shop')).toBe(true);
    const after = await get('v1', 'Service', namespace, 'shop');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.metadata.ownerReferences).toBeUndefined();
    expect(after.metadata.managedFields.map((m: any) => m.manager)).toEqual(['kubectl']);
    // A refused create is not a failed write: no ApplyFailed, no error result.
    expect(await events(namespace, 'shop', 'ApplyFailed')).toEqual([]);
    expect((await running.controller.metrics.reconciles.get()).values.find((v) => v.labels.result === 'error')?.value ?? 0).toBe(0);

    // Gone: the next recheck reads it gone, and the cluster's own is created.
    await client.request('DELETE', resourcePath('v1', 'Service', namespace, 'shop'));
    const fixed = await converged(client, namespace, 'shop', 5);
    expect(degraded(fixed)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    expect((await get('v1', 'Service', namespace, 'shop')).metadata.ownerReferences[0]).toMatchObject({ kind: 'DistributedKV', name: 'shop', uid: fixed.metadata.uid });
  });

  it('refuses the newer of two clusters whose generated names clash (kv and kv-peers both want Service kv-peers): Degraded/NameClash, the older untouched', async () => {
    const namespace = await createNamespace(client, 'own-clash');
    running = await startController(client, namespace);
    await createCluster(client, namespace, 'kv-peers', SPEC);
    const older = await converged(client, namespace, 'kv-peers', 5);
    const service = await get('v1', 'Service', namespace, 'kv-peers');

    await createCluster(client, namespace, 'kv', SPEC);
    const newer = await degradedWith(namespace, 'kv', 'NameClash');
    expect(degraded(newer)!.message).toContain('Service/kv-peers is also generated by DistributedKV kv-peers');

    expect(await exists('apps/v1', 'StatefulSet', namespace, 'kv')).toBe(false);
    expect(await exists('v1', 'Service', namespace, 'kv')).toBe(false);
    expect((await get('v1', 'Service', namespace, 'kv-peers')).metadata.resourceVersion).toBe(service.metadata.resourceVersion);
    const olderNow = await client.request('GET', clusterPath(namespace, 'kv-peers'));
    expect(degraded(olderNow)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    expect(olderNow.status.generatedObjects).toEqual(older.status.generatedObjects);
    expect(await events(namespace, 'kv', 'NameClash')).toHaveLength(1);
    // Refused for good, not retried hot: the next change to either cluster brings it back.
    expect((await running.controller.metrics.reconciles.get()).values.find((v) => v.labels.result === 'error')?.value ?? 0).toBe(0);
  });

  describe('refuses a configuration change a running StatefulSet cannot take, and writes nothing', () => {
    async function convergeThenRestartWith(prefix: string, changed: GeneratorConfig): Promise<{ namespace: string; statefulSet: any }> {
      const namespace = await createNamespace(client, prefix);
      running = await startController(client, namespace);
      await createCluster(client, namespace, 'kv', SPEC);
      await converged(client, namespace, 'kv', 5);
      const statefulSet = await get('apps/v1', 'StatefulSet', namespace, 'kv');
      await running.stop();
      running = await startController(client, namespace, { config: changed });
      return { namespace, statefulSet };
    }

    it('a new StatefulSet name template: no second StatefulSet, the first not pruned', async () => {
      const { namespace, statefulSet } = await convergeThenRestartWith('own-rename', { ...config, names: { ...config.names, statefulSet: '{name}-db' } });
      const cr = await degradedWith(namespace, 'kv', 'ConfigChangeRefused');
      expect(degraded(cr)!.message).toContain('StatefulSet/kv holds this cluster\'s members, but the configuration now names it kv-db (names.statefulSet)');
      expect(await exists('apps/v1', 'StatefulSet', namespace, 'kv-db')).toBe(false);
      expect((await get('apps/v1', 'StatefulSet', namespace, 'kv')).metadata.resourceVersion).toBe(statefulSet.metadata.resourceVersion);
    });

    it('new selector labels (which also hide the old objects from the label-filtered cache): no failed applies, nothing changed', async () => {
      const labels = { ...config.labels, 'app.kubernetes.io/name': 'kv-store' };
      const { namespace, statefulSet } = await convergeThenRestartWith('own-selector', { ...config, labels });
      const cr = await degradedWith(namespace, 'kv', 'ConfigChangeRefused');
      expect(degraded(cr)!.message).toContain('StatefulSet/kv: spec.selector');
      expect(degraded(cr)!.message).toContain('labels / selectorLabels');
      expect((await get('apps/v1', 'StatefulSet', namespace, 'kv')).metadata.resourceVersion).toBe(statefulSet.metadata.resourceVersion);
      expect((await running!.controller.metrics.applies.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
      // The members still run: status reports them from the live StatefulSet, not from the refused spec.
      expect(cr.status.generatedObjects.find((g: any) => g.kind === 'StatefulSet')).toMatchObject({ name: 'kv', uid: statefulSet.metadata.uid });
    });
  });

  it('reports a configuration patch that cannot apply to this cluster\'s spec as Degraded/InvalidConfig, naming the patch, and writes nothing', async () => {
    // Loaded from a file, this configuration would be refused up front (patches are tried on specs of every
    // shape); built in code it is not, which is how a patch the probes miss reaches the controller.
    const patched: GeneratorConfig = { ...config, patches: { StatefulSet: [{ op: 'test', path: '/spec/replicas', value: 5 }] } };
    const namespace = await createNamespace(client, 'own-config');
    running = await startController(client, namespace, { config: patched });
    await createCluster(client, namespace, 'kv', SPEC);
    const cr = await degradedWith(namespace, 'kv', 'InvalidConfig');
    expect(degraded(cr)!.message).toContain('patches.StatefulSet[0]');
    expect(await exists('apps/v1', 'StatefulSet', namespace, 'kv')).toBe(false);
    expect(await events(namespace, 'kv', 'InvalidConfig')).toHaveLength(1);
    expect((await running.controller.metrics.reconciles.get()).values.find((v) => v.labels.result === 'error')?.value ?? 0).toBe(0);
  });

  it('stops correcting a field another writer keeps changing (an autoscaler on replicas): Degraded/FieldConflict naming it, one Event, and the writer\'s value stands', async () => {
    const namespace = await createNamespace(client, 'own-fight');
    running = await startController(client, namespace, { fieldFights: { threshold: 3, windowMs: 60_000, holdMs: 60_000, maxHoldMs: 60_000 } });
    await createCluster(client, namespace, 'kv', SPEC);
    await converged(client, namespace, 'kv', 5);
    const sts = resourcePath('apps/v1', 'StatefulSet', namespace, 'kv');
    const autoscale = () => client.request('PATCH', `${sts}/scale`, { query: { fieldManager: 'horizontal-pod-autoscaler' }, body: { spec: { replicas: 5 } }, contentType: mergePatch });

    // The autoscaler: scales to 5 whenever the controller has put 3 back. Bounded: it gives up after 10 rounds.
    let held: any;
    for (let round = 0; round < 10 && !held; round++) {
      await autoscale();
      held = await eventually('the controller to restore replicas, or to leave them to the autoscaler and say why', async () => {
        const replicas = (await client.request('GET', sts)).spec.replicas;
        if (replicas === 3) return false;
        const cr = await client.request('GET', clusterPath(namespace, 'kv'));
        return degraded(cr)?.reason === 'FieldConflict' ? cr : undefined;
      }) || undefined;
    }
    expect(held).toBeDefined();
    expect(degraded(held)!.message).toContain('StatefulSet/kv spec.replicas: horizontal-pod-autoscaler (scale) keeps changing it');
    // The controller has seen the autoscaler's last write (its cache holds it, nothing is queued) and left it.
    const { controller } = running;
    await eventually('the controller to be idle with the last write cached', async () => {
      const live = await client.request('GET', sts);
      const cached = controller.owned.get('apps/v1/StatefulSet')!.get(`${namespace}/kv`);
      return cached?.metadata.resourceVersion === live.metadata.resourceVersion && controller.idle ? true : undefined;
    });
    expect((await client.request('GET', sts)).spec.replicas).toBe(5);
    const fights = await events(namespace, 'kv', 'FieldConflict');
    expect(fights).toHaveLength(1);
    expect(fights[0].message).toContain('Handing a field over');
    expect(await events(namespace, 'kv', 'DriftCorrected')).toHaveLength(3);
    expect(degraded(await client.request('GET', clusterPath(namespace, 'kv')))?.reason).toBe('FieldConflict');
    // The drift brake engaged once, which the DKVDriftFight alert reads (docs/monitoring.md).
    const braked = (await controller.metrics.fieldFights.get()).values;
    expect(braked.map((v) => [v.labels, v.value])).toEqual([[{ kind: 'StatefulSet', field: 'spec.replicas', manager: 'horizontal-pod-autoscaler (scale)' }, 1]]);
  });
});
