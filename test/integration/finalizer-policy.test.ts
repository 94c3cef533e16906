/**
 * `dkv install --finalizer-policy`: the MutatingAdmissionPolicy that puts the
 * final-backup finalizer on a cluster with backups as it is created, run by
 * the real kube-apiserver's admission chain, and the controller, which then
 * has no finalizer write of its own to make. Bound with --watch-namespace to
 * this test's namespace, so that tests sharing the control plane are not
 * touched by it.
 */
import type { KubeClient } from '../../kube/client.js';
import { clusterPath, config, converged, createCluster, startController, type RunningController } from './controller-harness.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient } from '../cluster/kube.js';
import { applyFinalizerPolicy, finalizerPolicyObjects } from '../support/finalizer-policy.js';
import { resourcePath } from '../../kube/client.js';

const FINALIZER = config.backup.final.finalizer;
/** Backups into a folder of the cluster's own: two clusters may not share one (the generic engine names its runner). */
const backupOf = (name: string) => ({ s3Path: `s3://dkv-test/policy/${name}`, schedule: '0 2 * * *', backupImage: 'kv-backup:1' });
const withBackups = (name: string) => ({ size: 3, image: 'kv:1', backup: backupOf(name) });
const WITHOUT_BACKUPS = { size: 3, image: 'kv:1' };

/** `manager/operation` of each managedFields entry that holds the finalizer we add. */
function finalizerOwners(cr: any): string[] {
  return (cr.metadata.managedFields ?? [])
    .filter((entry: any) => entry.fieldsV1?.['f:metadata']?.['f:finalizers']?.[`v:"${FINALIZER}"`] !== undefined)
    .map((entry: any) => `${entry.manager}/${entry.operation}`);
}

describeWithCluster('the final-backup finalizer, put on at creation by the bundle\'s admission policy', () => {
  let client: KubeClient;
  let namespace: string;
  let elsewhere: string;
  let running: RunningController | undefined;
  const get = (name: string, ns = namespace) => client.request('GET', clusterPath(ns, name));

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
    namespace = await createNamespace(client, 'finalizer-policy');
    elsewhere = await createNamespace(client, 'finalizer-policy-not-bound');
    await applyFinalizerPolicy(client, namespace, namespace);
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    for (const o of finalizerPolicyObjects(namespace)) await client.request('DELETE', resourcePath(o.apiVersion, o.kind, undefined, o.metadata.name)).catch(() => undefined);
    client?.close();
  });

  it('is on a cluster with backups in the create\'s own response, beside any finalizer its creator set', async () => {
    const created = await createCluster(client, namespace, 'with-backups', withBackups('with-backups'));
    expect(created.metadata.finalizers).toEqual([FINALIZER]);
    const own = await client.request('POST', clusterPath(namespace), {
      body: { apiVersion: created.apiVersion, kind: created.kind, metadata: { name: 'with-own-finalizer', namespace, finalizers: ['example.com/keep'] }, spec: withBackups('with-own-finalizer') },
    });
    expect([...own.metadata.finalizers].sort()).toEqual(['example.com/keep', FINALIZER].sort());
    // Fields admission adds are attributed to no manager: an entry holding it is a write that added it.
    expect(finalizerOwners(created)).toEqual([]);
    // Not stored twice when the creator already named it.
    const named = await client.request('POST', clusterPath(namespace), {
      body: { apiVersion: created.apiVersion, kind: created.kind, metadata: { name: 'already-named', namespace, finalizers: [FINALIZER] }, spec: withBackups('already-named') },
    });
    expect(named.metadata.finalizers).toEqual([FINALIZER]);
  });

  it('leaves alone a cluster without backups, an update that turns them on, and namespaces it is not bound to', async () => {
    expect((await createCluster(client, namespace, 'without-backups', WITHOUT_BACKUPS)).metadata.finalizers).toBeUndefined();
    const turnedOn = await client.request('PATCH', clusterPath(namespace, 'without-backups'), { body: { spec: { backup: backupOf('without-backups') } }, contentType: 'application/merge-patch+json' });
    expect(turnedOn.metadata.finalizers).toBeUndefined();
    expect((await createCluster(client, elsewhere, 'not-bound', withBackups('not-bound'))).metadata.finalizers).toBeUndefined();
  });

  it('leaves the controller no finalizer write where the policy put it on, and the controller still adds it where it did not', async () => {
    running = await startController(client, namespace);
    await converged(client, namespace, 'with-backups', 6, 60_000);
    // Turned on by an update, which the policy does not see: the controller adds it, as without the policy.
    const added = await eventually('the controller to add the finalizer to without-backups', async () => {
      const cr = await get('without-backups');
      return (cr.metadata.finalizers ?? []).includes(FINALIZER) ? cr : undefined;
    }, 30_000, 200);
    expect(finalizerOwners(added)).toEqual([`${config.controller.fieldManager}/Apply`]);
    const policyMade = await get('with-backups');
    expect(policyMade.metadata.finalizers).toEqual([FINALIZER]);
    expect(finalizerOwners(policyMade)).toEqual([]);
  }, 90_000);
});
