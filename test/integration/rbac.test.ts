/**
 * The generated install bundle (constructs/install/, what `dkv install`
 * writes into deploy/) grants what the controller needs: applied whole to a
 * real API server in RBAC mode, the controller, running with a token of the
 * bundle's ServiceAccount and nothing else, converges a cluster, corrects
 * drift, elects itself leader and lets a deleted cluster go. The API server
 * runs OwnerReferencesPermissionEnforcement (as OpenShift does), under which
 * setting blockOwnerDeletion on the generated objects' owner references
 * needs `update` on distributedkvs/finalizers. With --watch-namespace the
 * same holds in the watched namespace, and nothing is granted elsewhere.
 */
import { renderInstall } from '../../cli/install-command.js';
import { loadDefaultConfig } from '../../api/config.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { LeaderElector } from '../../kube/leader.js';
import { SHARD_GROUP_LABEL, ShardMembership } from '../../kube/shard-membership.js';
import { realClock } from '../../kube/clock.js';
import { createLogger } from '../../kube/log.js';
import { CertificateRotation } from '../../conversion/certificate-rotation.js';
import { CRD_NAME } from '../../api/crd.js';
import type { KubeObject } from '../../model/kube-object.js';
import { parseControllerFlags } from '../../reconciler/process/controller-flags.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient, untilGone } from '../cluster/kube.js';
import { serviceAccountToken, withToken } from '../support/connections.js';
import { clusterPath, converged, createCluster, startController } from './controller-harness.js';

const defaults = loadDefaultConfig();

/** Applies every object of the bundle, in its order, as `kubectl apply --server-side -f` would. */
async function applyBundle(admin: KubeClient, objects: readonly KubeObject[]): Promise<void> {
  for (const object of objects) await admin.apply(object, { fieldManager: 'dkv-test', force: true });
}

/** A client with only the bundle's ServiceAccount's token. */
async function controllerToken(admin: KubeClient, objects: readonly KubeObject[]): Promise<KubeClient> {
  const account = objects.find((o) => o.kind === 'ServiceAccount')!;
  return withToken(admin, await serviceAccountToken(admin, account.metadata.namespace!, account.metadata.name));
}

/** `dkv controller`'s flags as the bundle's Deployment passes them. */
function deploymentFlags(objects: readonly KubeObject[]): ReturnType<typeof parseControllerFlags> {
  const deployment = objects.find((o) => o.kind === 'Deployment') as any;
  const [command, ...args] = deployment.spec.template.spec.containers[0].args as string[];
  expect(command).toBe('controller');
  return parseControllerFlags(args);
}

/**
 * Registers a describe's setup: the CRD and the default bundle applied, a client with the test's
 * (admin) credentials and one with the token of the bundle's ServiceAccount.
 */
function bundleClients(): { readonly bundle: KubeObject[]; admin: KubeClient; controller: KubeClient } {
  const clients = { bundle: renderInstall() } as { readonly bundle: KubeObject[]; admin: KubeClient; controller: KubeClient };
  beforeAll(async () => {
    clients.admin = testClient();
    await installCrd(clients.admin);
    await applyBundle(clients.admin, clients.bundle);
    clients.controller = await controllerToken(clients.admin, clients.bundle);
  });
  afterAll(() => {
    clients.admin?.close();
    clients.controller?.close();
  });
  return clients;
}

const gone = (admin: KubeClient, namespace: string, name: string) => untilGone(admin, clusterPath(namespace, name), `${namespace}/${name}`);

describeWithCluster('the controller with only the permissions of the generated install bundle', () => {
  const clients = bundleClients();

  it('is accepted whole by the API server, strict field validation on: the Deployment runs two replicas as the ServiceAccount, probed on /healthz and /readyz', async () => {
    const deployment = await clients.admin.request('GET', resourcePath('apps/v1', 'Deployment', 'dkv-system', 'dkv-controller'));
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.serviceAccountName).toBe('dkv-controller');
    expect(deployment.spec.template.spec.containers[0].livenessProbe.httpGet.path).toBe('/healthz');
    expect(deployment.spec.template.spec.containers[0].readinessProbe.httpGet.path).toBe('/readyz');
    const budget = await clients.admin.request('GET', resourcePath('policy/v1', 'PodDisruptionBudget', 'dkv-system', 'dkv-controller'));
    expect(budget.spec.selector).toEqual(deployment.spec.selector);
    expect(deploymentFlags(clients.bundle).namespace).toBeUndefined(); // every namespace
  });

  it('is refused what the roles do not grant: a Secret read by name or patched, and Leases outside its own namespace; a Secret deleted only as the cache saw it', async () => {
    // Secrets: list and watch (the label-selected TLS cache), create, update (rotation, a PUT with the version it read) and delete (a revoked client identity's): no get, no patch.
    await clients.admin.request('POST', '/api/v1/namespaces/default/secrets', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'rbac-someone-elses' }, stringData: { password: 'x' } } })
      .catch((e) => { if (e.status !== 409) throw e; });
    const secret = '/api/v1/namespaces/default/secrets/rbac-someone-elses';
    await expect(clients.controller.request('GET', secret)).rejects.toMatchObject({ status: 403 });
    await expect(clients.controller.request('PATCH', secret, { body: { stringData: { password: 'y' } }, contentType: 'application/merge-patch+json' })).rejects.toMatchObject({ status: 403 });
    // RBAC cannot narrow a delete by label: the controller deletes with the uid its cache showed, which another Secret fails.
    await expect(clients.controller.request('DELETE', secret, { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: '00000000-0000-0000-0000-000000000000' } } }))
      .rejects.toMatchObject({ status: 409 });
    // In its own namespace any Lease is readable (sharded replicas name theirs at run time): absent, not forbidden.
    await expect(clients.controller.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', 'dkv-system', 'someone-elses'))).rejects.toMatchObject({ status: 404 });
    await expect(clients.controller.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', 'default', defaults.controller.leaseName))).rejects.toMatchObject({ status: 403 });
    await expect(clients.controller.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', 'default'))).rejects.toMatchObject({ status: 403 });
  });

  it('is refused by the bundle\'s admission policy any Secret, StatefulSet, CronJob or Job write that is not a DistributedKV\'s, where RBAC would allow it', async () => {
    const namespace = await createNamespace(clients.admin, 'rbac-policy');
    const labels = { 'app.kubernetes.io/name': 'distributedkv', 'app.kubernetes.io/managed-by': 'dkv', 'app.kubernetes.io/instance': 'kv' };
    // A controller owner reference to a DistributedKV (no blockOwnerDeletion: that needs update on its finalizers, which is not the point here).
    const ownerReferences = [{ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', name: 'kv', uid: '11111111-1111-1111-1111-111111111111', controller: true }];
    const secrets = resourcePath('v1', 'Secret', namespace);
    const refusal = { status: 403, message: expect.stringContaining('dkv-controller-writes') };
    // The policy is in force once the API server has loaded it: a write that is not the project's is refused (retried until then).
    await eventually('the admission policy in force', () => clients.controller.request('POST', secrets, { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'loose' }, stringData: { a: 'b' } } })
      .then(async () => {
        await clients.admin.request('DELETE', resourcePath('v1', 'Secret', namespace, 'loose'));
        return undefined;
      }, (e) => (e.status === 403 && /dkv-controller-writes/.test(e.message) ? true : Promise.reject(e))), 30_000, 250);
    // Labelled but not a DistributedKV's; a DistributedKV's but a ServiceAccount token (whose token a `list` would read).
    await expect(clients.controller.request('POST', secrets, { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'labelled', labels }, stringData: { a: 'b' } } })).rejects.toMatchObject(refusal);
    await expect(clients.controller.request('POST', secrets, {
      body: { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: { name: 'token', labels, ownerReferences, annotations: { 'kubernetes.io/service-account.name': 'default' } } },
    })).rejects.toMatchObject(refusal);
    // Someone else's Secret: neither replaced nor deleted, though RBAC grants update and delete.
    const theirs = await clients.admin.request('POST', secrets, { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'theirs' }, stringData: { password: 'x' } } });
    await expect(clients.controller.request('PUT', resourcePath('v1', 'Secret', namespace, 'theirs'), { body: { ...theirs, stringData: { password: 'y' } } })).rejects.toMatchObject(refusal);
    await expect(clients.controller.request('DELETE', resourcePath('v1', 'Secret', namespace, 'theirs'), { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: theirs.metadata.uid } } })).rejects.toMatchObject(refusal);
    // A StatefulSet under any ServiceAccount: what would amount to cluster-admin in kube-system.
    const statefulSet = (name: string, metadata: Record<string, unknown>, pod: Record<string, unknown>) => ({
      apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, ...metadata },
      spec: { serviceName: name, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...pod } } },
    });
    const statefulSets = resourcePath('apps/v1', 'StatefulSet', namespace);
    await expect(clients.controller.request('POST', resourcePath('apps/v1', 'StatefulSet', 'kube-system'), { body: statefulSet('escalate', {}, { serviceAccountName: 'clusterrole-aggregation-controller' }) })).rejects.toMatchObject(refusal);
    await expect(clients.controller.request('POST', statefulSets, { body: statefulSet('token', { labels, ownerReferences }, {}) })).rejects.toMatchObject(refusal);
    await expect(clients.controller.request('POST', statefulSets, { body: statefulSet('host', { labels, ownerReferences }, { automountServiceAccountToken: false, volumes: [{ name: 'h', hostPath: { path: '/' } }] }) })).rejects.toMatchObject(refusal);
    await expect(clients.controller.request('POST', resourcePath('batch/v1', 'Job', namespace), {
      body: { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'job', labels }, spec: { template: { spec: { restartPolicy: 'Never', automountServiceAccountToken: false, containers: [{ name: 'c', image: 'busybox' }] } } } },
    })).rejects.toMatchObject(refusal);
    // What a DistributedKV's objects look like passes (the cluster below converges under the same policy): not a blanket refusal.
    await clients.controller.request('POST', secrets, { body: { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: 'ours', labels, ownerReferences }, stringData: { 'tls.crt': 'x', 'tls.key': 'y' } } });
    await clients.controller.request('POST', statefulSets, { body: statefulSet('ours', { labels, ownerReferences }, { automountServiceAccountToken: false }) });
  });

  it('can run shard membership in its own namespace: create, renew and list its Leases, release its own, delete a released one', async () => {
    const views: string[][] = [];
    const member = (identity: string) => new ShardMembership({
      client: clients.controller, namespace: 'dkv-system', group: defaults.sharding.group, identity, clock: realClock, log: createLogger('silent'),
      leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 250,
      onView: async (view) => void views.push([...view.members]), onLost: () => undefined,
    });
    const leases = async () => (await clients.admin.request('GET', resourcePath('coordination.k8s.io/v1', 'Lease', 'dkv-system'), { query: { labelSelector: `${SHARD_GROUP_LABEL}=${defaults.sharding.group}` } })).items
      .map((l: { metadata: { name: string } }) => l.metadata.name).sort();
    const a = member('rbac-a');
    const b = member('rbac-b');
    a.start();
    b.start();
    try {
      await eventually('both replicas in one view', async () => (views.some((v) => v.length === 2) ? true : undefined));
      expect(await leases()).toEqual([`${defaults.sharding.group}-rbac-a`, `${defaults.sharding.group}-rbac-b`]);
      await b.stop(); // released (PUT) by b, then deleted by a (DELETE)
      await eventually('the released Lease deleted', async () => ((await leases()).length === 1 ? true : undefined));
      expect(await leases()).toEqual([`${defaults.sharding.group}-rbac-a`]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('converges a cluster (owner references with blockOwnerDeletion), corrects drift, and lets a deleted cluster go', async () => {
    const namespace = await createNamespace(clients.admin, 'rbac');
    // The default configuration (etcd engine): its member ConfigMap needs its own rule. No Job runs here (no
    // kube-controller-manager), so the final backup's Job is created and then given up after 2 s.
    const running = await startController(clients.controller, namespace, { config: { ...defaults, backup: { ...defaults.backup, final: { ...defaults.backup.final, timeoutSeconds: 2 } } } });
    try {
      await createCluster(clients.admin, namespace, 'kv', { size: 3, image: 'kv:1', backup: { s3Path: 's3://b/x', schedule: '@daily' } });
      await converged(clients.admin, namespace, 'kv', 7); // with the etcd engine's member ConfigMap and the NetworkPolicy
      // Its TLS Secrets, issued under the role (secrets: create), labelled for the cache (list, watch) and owned by the cluster.
      const issued = (await clients.admin.request('GET', `/api/v1/namespaces/${namespace}/secrets`)).items.filter((s: any) => s.metadata.name.startsWith('kv-tls-'));
      expect(issued.map((s: any) => s.metadata.name).sort()).toEqual(['kv-tls-ca', 'kv-tls-client', 'kv-tls-member']);
      for (const s of issued) expect(s.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'DistributedKV', name: 'kv', controller: true })]);
      // Rotation's verb (secrets: update): a member Secret without its CRL (as one issued before rotation existed) gets it back, replaced whole.
      const memberSecret = resourcePath('v1', 'Secret', namespace, 'kv-tls-member');
      const withoutCrl = await clients.admin.request('GET', memberSecret);
      delete withoutCrl.data['crl.der'];
      await clients.admin.request('PUT', memberSecret, { body: withoutCrl });
      await eventually('the members\' CRL put back by the controller', async () => ((await clients.admin.request('GET', memberSecret)).data['crl.der'] ? true : undefined));
      const sts = resourcePath('apps/v1', 'StatefulSet', namespace, 'kv');
      await clients.admin.request('PATCH', `${sts}/scale`, { query: { fieldManager: 'kubectl' }, body: { spec: { replicas: 7 } }, contentType: 'application/merge-patch+json' });
      await eventually('the scale to be reverted', async () => ((await clients.admin.request('GET', sts)).spec.replicas === 3 ? true : undefined));
      expect((await clients.admin.request('GET', clusterPath(namespace, 'kv'))).metadata.finalizers).toEqual([defaults.backup.final.finalizer]);
      await clients.admin.request('DELETE', clusterPath(namespace, 'kv'));
      // The final backup's Job, created under the role (jobs: create), before the deletion goes on.
      await eventually('the final backup Job', async () => ((await clients.admin.request('GET', resourcePath('batch/v1', 'Job', namespace, 'kv-backup-final')).catch(() => undefined)) ? true : undefined));
      await gone(clients.admin, namespace, 'kv');
      // Its objects are the garbage collector's (status-truth.test.ts proves it where one runs).
      const [statefulSet] = (await clients.admin.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace))).items;
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
      client: clients.controller, namespace: 'dkv-system', name: defaults.controller.leaseName, identity: 'rbac-test',
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

describeWithCluster('the install bundle for a controller that watches one namespace (--watch-namespace)', () => {
  let admin: KubeClient;
  let controllerClient: KubeClient;
  let watched: string;
  let bundle: KubeObject[];

  beforeAll(async () => {
    admin = testClient();
    await installCrd(admin);
    watched = await createNamespace(admin, 'rbac-watched');
    bundle = renderInstall({ namespace: `${watched}-dkv`, watchNamespace: watched });
    await applyBundle(admin, bundle);
    controllerClient = await controllerToken(admin, bundle);
  });
  afterAll(() => {
    admin?.close();
    controllerClient?.close();
  });

  it('converges and lets go of a cluster in the watched namespace, the one its Deployment names', async () => {
    const flags = deploymentFlags(bundle);
    expect(flags.namespace).toBe(watched);
    const running = await startController(controllerClient, flags.namespace!, { config: defaults });
    try {
      await createCluster(admin, watched, 'kv', { size: 3, image: 'kv:1' });
      await converged(admin, watched, 'kv', 6); // StatefulSet, two Services, PodDisruptionBudget, NetworkPolicy, member ConfigMap
      await admin.request('DELETE', clusterPath(watched, 'kv'));
      await gone(admin, watched, 'kv');
      const failures = (await running.controller.metrics.reconciles.get()).values.filter((v) => v.labels.result === 'error');
      expect(failures.reduce((n, v) => n + v.value, 0)).toBe(0);
    } finally {
      await running.stop();
    }
  });

  it('reads StorageClasses (cluster-scoped, for volume growth) through a binding of their own', async () => {
    await expect(controllerClient.request('GET', '/apis/storage.k8s.io/v1/storageclasses')).resolves.toMatchObject({ kind: 'StorageClassList' });
  });

  it('is granted nothing outside the watched namespace', async () => {
    const other = await createNamespace(admin, 'rbac-other');
    await expect(controllerClient.request('GET', resourcePath('apps/v1', 'StatefulSet', other))).rejects.toMatchObject({ status: 403 });
    await expect(controllerClient.request('GET', clusterPath(other))).rejects.toMatchObject({ status: 403 });
    await expect(controllerClient.request('GET', '/apis/example.com/v1beta1/distributedkvs')).rejects.toMatchObject({ status: 403 });
  });
});

// Last: injecting the CA bundle updates the shared CRD, which makes the API server rebuild its
// storage and close its watches; no other controller of this file is running by then.
describeWithCluster('the controller\'s conversion webhook and storage migration with only the bundle\'s permissions', () => {
  const clients = bundleClients();

  it('can make its conversion webhook\'s certificate in its own namespace and inject the CA bundle into the CRD', async () => {
    const rotation = new CertificateRotation({ client: clients.controller, config: defaults, namespace: 'dkv-system', clock: realClock, log: createLogger('silent') });
    const { steps } = await rotation.settle();
    expect(steps).toEqual(['ca-created', 'ca-bundle-injected', 'serving-renewed', 'in-order']);
    const secret = await clients.admin.request('GET', resourcePath('v1', 'Secret', 'dkv-system', defaults.conversion.certificateSecret));
    const crd = await clients.admin.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`);
    expect(crd.spec.conversion.webhook.clientConfig.caBundle).toBe(secret.data['ca.crt']);
    // Another namespace's Secrets stay out of reach.
    await expect(clients.controller.request('GET', resourcePath('v1', 'Secret', 'default', defaults.conversion.certificateSecret))).rejects.toMatchObject({ status: 403 });
  });

  it('may do what a storage version migration does: update every DistributedKV and patch the CRD\'s status', async () => {
    // Asked, not done: a real migration here would rewrite other tests' objects on the shared control plane.
    const allowed = async (resourceAttributes: Record<string, string>) => (await clients.controller.request('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes } },
    })).status.allowed;
    expect(await allowed({ group: 'example.com', resource: 'distributedkvs', verb: 'update', namespace: 'any' })).toBe(true);
    expect(await allowed({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', subresource: 'status', verb: 'patch', name: CRD_NAME })).toBe(true);
    expect(await allowed({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', subresource: 'status', verb: 'patch', name: 'other.example.com' })).toBe(false);
  });
});
