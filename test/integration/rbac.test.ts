/**
 * deploy/rbac.yaml grants what the controller needs: the controller, running
 * with a token of that service account and nothing else, converges a
 * cluster, corrects drift, elects itself leader and lets a deleted cluster
 * go. The API server runs OwnerReferencesPermissionEnforcement (as OpenShift
 * does), under which setting blockOwnerDeletion on the generated objects'
 * owner references needs `update` on distributedkvs/finalizers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../api/package-root.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { LeaderElector } from '../../kube/leader.js';
import { createNamespace, describeWithCluster, eventually, installCrd, isApiError, testClient } from '../cluster/kube.js';
import { withToken } from '../support/connections.js';
import { loadDefaultConfig } from '../../api/config.js';
import { clusterPath, converged, createCluster, startController } from './controller-harness.js';

describeWithCluster('the controller with only the permissions of deploy/rbac.yaml', () => {
  let admin: KubeClient;
  let controllerClient: KubeClient;

  beforeAll(async () => {
    admin = testClient();
    await installCrd(admin);
    await admin.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dkv-system' } } }).catch((e) => {
      if (!isApiError(e, 409)) throw e;
    });
    for (const doc of parseAllDocuments(readFileSync(join(packageRoot(), 'deploy', 'rbac.yaml'), 'utf8'))) {
      await admin.apply(doc.toJS(), { fieldManager: 'dkv-test', force: true });
    }
    const token = await admin.request('POST', resourcePath('v1', 'ServiceAccount', 'dkv-system', 'dkv-controller') + '/token', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    });
    controllerClient = withToken(admin, token.status.token);
  });
  afterAll(() => {
    admin?.close();
    controllerClient?.close();
  });

  it('deploy/controller.yaml is accepted by the API server (server-side dry-run)', async () => {
    const [deployment] = parseAllDocuments(readFileSync(join(packageRoot(), 'deploy', 'controller.yaml'), 'utf8')).map((d) => d.toJS());
    const result = await admin.apply(deployment, { fieldManager: 'dkv-test', dryRun: true });
    expect(result.spec.template.spec.serviceAccountName).toBe('dkv-controller');
    expect(result.spec.template.spec.containers[0].readinessProbe.httpGet.path).toBe('/readyz');
  });

  it('is refused what the role does not grant', async () => {
    await expect(controllerClient.request('GET', '/api/v1/secrets')).rejects.toMatchObject({ status: 403 });
  });

  it('converges a cluster (owner references with blockOwnerDeletion), corrects drift, and lets a deleted cluster go', async () => {
    const namespace = await createNamespace(admin, 'rbac');
    // The default configuration (etcd engine): its member ConfigMap needs its own rule. No Job runs here (no
    // kube-controller-manager), so the final backup's Job is created and then given up after 2 s.
    const defaults = loadDefaultConfig();
    const running = await startController(controllerClient, namespace, { config: { ...defaults, backup: { ...defaults.backup, final: { ...defaults.backup.final, timeoutSeconds: 2 } } } });
    try {
      await createCluster(admin, namespace, 'kv', { size: 3, image: 'kv:1', backup: { s3Path: 's3://b/x', schedule: '@daily' } });
      await converged(admin, namespace, 'kv', 6); // with the etcd engine's member ConfigMap
      const sts = resourcePath('apps/v1', 'StatefulSet', namespace, 'kv');
      await admin.request('PATCH', `${sts}/scale`, { query: { fieldManager: 'kubectl' }, body: { spec: { replicas: 7 } }, contentType: 'application/merge-patch+json' });
      await eventually('the scale to be reverted', async () => ((await admin.request('GET', sts)).spec.replicas === 3 ? true : undefined));
      expect((await admin.request('GET', clusterPath(namespace, 'kv'))).metadata.finalizers).toEqual([defaults.backup.final.finalizer]);
      await admin.request('DELETE', clusterPath(namespace, 'kv'));
      // The final backup's Job, created under the role (jobs: create), before the deletion goes on.
      await eventually('the final backup Job', async () => ((await admin.request('GET', resourcePath('batch/v1', 'Job', namespace, 'kv-backup-final')).catch(() => undefined)) ? true : undefined));
      await eventually('the cluster to be gone', async () => {
        try {
          await admin.request('GET', clusterPath(namespace, 'kv'));
          return undefined;
        } catch (e) {
          return isApiError(e, 404) ? true : undefined;
        }
      });
      // Its objects are the garbage collector's (status-truth.test.ts proves it where one runs).
      const [statefulSet] = (await admin.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace))).items;
      expect(statefulSet.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'DistributedKV', name: 'kv', controller: true, blockOwnerDeletion: true })]);
      const failures = (await running.controller.metrics.reconciles.get()).values.filter((v) => v.labels.result === 'error');
      expect(failures.reduce((n, v) => n + v.value, 0)).toBe(0);
    } finally {
      await running.stop();
    }
  });

  it('can hold the leader Lease in its own namespace', async () => {
    let leading = false;
    const elector = new LeaderElector({
      client: controllerClient, namespace: 'dkv-system', name: 'dkv-controller', identity: 'rbac-test',
      leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250,
      onStartedLeading: () => (leading = true), onStoppedLeading: () => (leading = false),
    });
    elector.start();
    try {
      await eventually('leadership', async () => (leading ? true : undefined));
    } finally {
      await elector.stop();
    }
  });
});
