/**
 * The controller's install bundle (constructs/install/, `dkv install`):
 * what the Deployment promises (restricted pods, probes on the health
 * endpoints, a standby replica), that every permission it grants is one the
 * controller's code uses (test/integration/rbac.test.ts proves they are
 * enough), what each option changes, and that the output is deterministic
 * and equal to the committed deploy/dkv-install.k8s.yaml.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { INSTALL_FILE, renderInstall } from '../../cli/install-command.js';
import { CONTROLLER_RULES } from '../../constructs/install/controller-cluster-role.js';
import { BACKUP_RUNNER_RULES } from '../../constructs/install/backup-runner-cluster-role.js';
import { resourcePath } from '../../kube/client.js';
import type { KubeObject } from '../../model/kube-object.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import { ISSUED_KINDS, OBSERVED_KINDS, OWNED_KINDS } from '../../reconciler/core/controller.js';
import { parseControllerFlags } from '../../reconciler/process/controller-flags.js';
import { CLI_TIMEOUT_MS, DEFAULT_CONFIG, ROOT, dkv, readTree, removeTemporaryDirectories, temporaryDirectory } from '../generator/support.js';

afterAll(removeTemporaryDirectories);

type Manifest = KubeObject & { spec?: any; rules?: any[]; subjects?: any[]; roleRef?: any; data?: Record<string, string> };

function one(objects: readonly Manifest[], kind: string, name?: string): Manifest {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0];
}

const bundle = (options: Parameters<typeof renderInstall>[0] = {}): Manifest[] => renderInstall(options) as Manifest[];
const podSpec = (objects: readonly Manifest[]) => one(objects, 'Deployment').spec.template.spec;
const container = (objects: readonly Manifest[]) => podSpec(objects).containers[0];
const controllerArgs = (objects: readonly Manifest[]) => {
  const [command, ...args] = container(objects).args as string[];
  expect(command).toBe('controller');
  return parseControllerFlags(args);
};

/** The resource name (plural) the API serves a kind under. */
const plural = (apiVersion: string, kind: string): string => resourcePath(apiVersion, kind).split('/').pop()!;
const group = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '');

/** The verbs a set of rules grants on one resource. */
function verbsOn(rules: readonly any[], apiGroup: string, resource: string): Set<string> {
  return new Set(rules.filter((r) => r.apiGroups.includes(apiGroup) && r.resources.includes(resource)).flatMap((r) => r.verbs as string[]));
}

function source(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

describe('the controller Deployment', () => {
  const objects = bundle();

  it('runs pods that meet the restricted Pod Security Standard: a numeric non-root user, no privilege escalation, no capabilities, a read-only root, RuntimeDefault seccomp', () => {
    const spec = podSpec(objects);
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(Number.isInteger(spec.securityContext.runAsUser) && spec.securityContext.runAsUser > 0).toBe(true);
    for (const c of spec.containers) {
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(c.securityContext.capabilities.add).toBeUndefined();
      expect(c.securityContext.privileged).toBeUndefined();
    }
    expect(spec.hostNetwork ?? false).toBe(false);
    expect(spec.serviceAccountName).toBe(one(objects, 'ServiceAccount').metadata.name);
  });

  it('runs two replicas, one leading and one warm, and drains take them one at a time', () => {
    const deployment = one(objects, 'Deployment');
    expect(deployment.spec.replicas).toBe(2);
    const budget = one(objects, 'PodDisruptionBudget');
    expect(budget.spec.maxUnavailable).toBe(1);
    expect(budget.spec.selector).toEqual(deployment.spec.selector);
    expect(deployment.spec.template.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(one(objects, 'Service', 'dkv-controller-metrics').spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('probes /healthz for liveness and /readyz for readiness on the port --health-addr serves, which the metrics Service exposes', () => {
    const c = container(objects);
    const port = c.ports.find((p: any) => p.name === c.livenessProbe.httpGet.port);
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: port.name });
    expect(controllerArgs(objects)).toMatchObject({ healthHost: '0.0.0.0', healthPort: port.containerPort });
    expect(one(objects, 'Service', 'dkv-controller-metrics').spec.ports).toEqual([expect.objectContaining({ name: 'metrics', port: port.containerPort, targetPort: port.name })]);
  });

  it('serves the conversion webhook on every replica, behind the Service the CRD sends the API server to', () => {
    const c = container(objects);
    const port = c.ports.find((p: any) => p.name === 'webhook');
    expect(port.containerPort).toBe(DEFAULT_CONFIG.conversion.port);
    expect(controllerArgs(objects).webhook).toEqual({ host: '0.0.0.0' }); // the configuration's port
    const service = one(objects, 'Service', DEFAULT_CONFIG.conversion.serviceName);
    expect(service.spec.selector).toEqual(one(objects, 'Deployment').spec.selector.matchLabels);
    expect(service.spec.ports).toEqual([expect.objectContaining({ port: 443, targetPort: 'webhook' })]);
    const clientConfig = one(objects, 'CustomResourceDefinition').spec.conversion.webhook.clientConfig;
    expect(clientConfig.service).toEqual({ namespace: service.metadata.namespace, name: service.metadata.name, path: '/convert', port: 443 });
    expect(clientConfig).not.toHaveProperty('caBundle'); // the controller's to write, not a GitOps tool's to take back
    const elsewhere = bundle({ namespace: 'ops' });
    expect(one(elsewhere, 'CustomResourceDefinition').spec.conversion.webhook.clientConfig.service.namespace).toBe('ops');
  });

  it('requests CPU and memory and limits memory', () => {
    expect(container(objects).resources).toEqual({ requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '384Mi' } });
  });

  it('keeps what the hand-written Deployment had: POD_NAMESPACE for the Lease, NODE_OPTIONS, the optional backup credentials Secret; and the arena bound the benchmark runs with', () => {
    const c = container(objects);
    expect(c.env).toEqual([
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=8' },
      { name: 'MALLOC_ARENA_MAX', value: '2' },
    ]);
    expect(c.envFrom).toEqual([{ secretRef: { name: DEFAULT_CONFIG.backup.runner.credentialsSecret, optional: true } }]);
    expect(DEFAULT_CONFIG.backup.runner.credentialsSecret).toBe('dkv-backup-credentials');
  });

  it('reads the configuration the ConfigMap holds (dkv.config.yaml), mounted where --config points, and rolls when it changes', () => {
    const configMap = one(objects, 'ConfigMap');
    const flags = controllerArgs(objects);
    const mount = container(objects).volumeMounts.find((m: any) => flags.config!.startsWith(`${m.mountPath}/`));
    const volume = podSpec(objects).volumes.find((v: any) => v.name === mount.name);
    expect(volume.configMap.name).toBe(configMap.metadata.name);
    expect(mount.readOnly).toBe(true);
    const file = flags.config!.slice(mount.mountPath.length + 1);
    expect(configMap.data![file]).toBe(readFileSync(DEFAULT_CONFIG_FILE, 'utf8'));
    const changed = bundle({ configFile: writeConfig('controller:\n  leaseName: other\n') });
    expect(one(changed, 'Deployment').spec.template.metadata.annotations).not.toEqual(one(objects, 'Deployment').spec.template.metadata.annotations);
  });

  it('runs the image dkv.config.yaml names for the backup runner: the controller\'s own image', () => {
    expect(container(objects).image).toBe(DEFAULT_CONFIG.backup.runner.image);
    expect(DEFAULT_CONFIG.backup.runner.image).toBe('registry.example.com/dkv/controller:0.1.0');
  });
});

describe('the controller\'s permissions', () => {
  const objects = bundle();
  const rules = one(objects, 'ClusterRole', 'dkv-controller').rules!;

  it('are bound to the controller\'s ServiceAccount in every namespace', () => {
    const binding = one(objects, 'ClusterRoleBinding', 'dkv-controller');
    const account = one(objects, 'ServiceAccount');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'dkv-controller' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name, namespace: account.metadata.namespace }]);
  });

  it('never grant a wildcard, RBAC, impersonation or escalation, and on Secrets only the webhook certificate\'s, in the controller\'s namespace, and the clusters\' TLS Secrets: listed and watched by label, created, replaced with a version precondition (rotation, renewal), deleted only to revoke a removed client identity, never read by name or patched', () => {
    const certificateRole = one(objects, 'Role', 'dkv-controller-webhook-certificate');
    expect(certificateRole.metadata.namespace).toBe('dkv-system');
    // create cannot be limited to a name (it is in the body); reading and replacing can.
    expect(certificateRole.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: [DEFAULT_CONFIG.conversion.certificateSecret], verbs: ['get', 'update'] },
    ]);
    const rotation = source('conversion/certificate-rotation.ts');
    for (const call of ["request('GET', this.secretPath)", "request('PUT', this.secretPath", "request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`"]) expect(rotation).toContain(call);
    const tlsSecrets = rules.filter((r) => r.resources.includes('secrets'));
    expect(tlsSecrets).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch', 'create', 'update', 'delete'] }]);
    // update: the rotation's and the client identities' renewal PUT (one function), always with the resourceVersion it read (never a patch, which needs none).
    expect(source('reconciler/core/secret-updates.ts')).toContain("request('PUT', resourcePath('v1', 'Secret', cached.metadata.namespace!, update.name)");
    expect(source('reconciler/core/secret-updates.ts')).toContain('resourceVersion: update.resourceVersion');
    for (const caller of ['reconciler/core/certificate-rotation-writes.ts', 'reconciler/core/client-identity-writes.ts']) expect(source(caller)).toContain('await updateSecret(ctx, ');
    // create: the TLS step's Secrets, POSTed (never applied: an issued Secret is not rewritten); list and watch: the label-selected cache.
    expect(source('reconciler/core/execute-writes.ts')).toContain("request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, { body })");
    expect(ISSUED_KINDS).toEqual([{ apiVersion: 'v1', kind: 'Secret' }]);
    for (const rule of [...rules.filter((r) => !tlsSecrets.includes(r)), ...objects.filter((o) => (o.kind === 'Role' && o !== certificateRole) || o.kind === 'ClusterRole').flatMap((o) => o.rules!)]) {
      expect([...rule.apiGroups, ...rule.resources, ...rule.verbs]).not.toContain('*');
      if (rule.resources.includes('secrets')) expect(rule).toEqual(tlsSecrets[0]);
      expect(rule.apiGroups).not.toContain('rbac.authorization.k8s.io');
      expect(rule.verbs).not.toEqual(expect.arrayContaining(['impersonate']));
      expect(rule.verbs).not.toEqual(expect.arrayContaining(['escalate']));
      expect(rule.verbs).not.toEqual(expect.arrayContaining(['bind']));
    }
  });

  it('list and watch exactly the kinds the controller caches, and on the kinds it generates also get, create and patch (server-side apply) and delete (prune)', () => {
    const watched = rules.filter((r) => r.verbs.includes('watch')).flatMap((r) => r.resources.map((resource: string) => `${r.apiGroups[0]}/${resource}`)).sort();
    const cached = [{ apiVersion: API_VERSION, kind: KIND }, ...OWNED_KINDS, ...ISSUED_KINDS, ...OBSERVED_KINDS].map((k) => `${group(k.apiVersion)}/${plural(k.apiVersion, k.kind)}`).sort();
    expect(watched).toEqual(cached);
    for (const { apiVersion, kind } of OWNED_KINDS) {
      expect([...verbsOn(rules, group(apiVersion), plural(apiVersion, kind))].sort()).toEqual(['create', 'delete', 'get', 'list', 'patch', 'watch']);
    }
    for (const { apiVersion, kind } of OBSERVED_KINDS) expect(verbsOn(rules, group(apiVersion), plural(apiVersion, kind))).toEqual(expect.objectContaining(new Set(['list', 'watch'])));
  });

  /**
   * Every other grant, with the call in the controller's code that needs it.
   * `get` beside `list` on DistributedKVs and their status exposes nothing
   * `list` does not (the listed objects carry their status).
   */
  const USES: ReadonlyArray<{ resource: string; verbs: string[]; file: string; call: string }> = [
    { resource: 'example.com/distributedkvs', verbs: ['patch'], file: 'reconciler/core/execute-writes.ts', call: "request('PATCH', resourcePath(API_VERSION, KIND, namespace, name)" },
    { resource: 'example.com/distributedkvs/status', verbs: ['patch'], file: 'reconciler/core/report.ts', call: "request('PATCH', `${path}/status`" },
    { resource: 'example.com/distributedkvs/finalizers', verbs: ['update'], file: 'reconciler/core/execute-writes.ts', call: 'blockOwnerDeletion: true' },
    { resource: 'batch/jobs', verbs: ['create'], file: 'reconciler/core/execute-writes.ts', call: "request('POST', resourcePath('batch/v1', 'Job', namespace)" },
    { resource: 'batch/jobs', verbs: ['delete'], file: 'reconciler/core/controller.ts', call: "request('DELETE', resourcePath('batch/v1', 'Job', j.metadata.namespace, j.metadata.name)" },
    { resource: '/secrets', verbs: ['create'], file: 'reconciler/core/execute-writes.ts', call: "request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, { body })" },
    { resource: '/secrets', verbs: ['delete'], file: 'reconciler/core/client-identity-writes.ts', call: "request('DELETE', path, { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: secret.metadata.uid } } })" },
    { resource: '/secrets', verbs: ['update'], file: 'reconciler/core/secret-updates.ts', call: "request('PUT', resourcePath('v1', 'Secret', cached.metadata.namespace!, update.name)" },
    { resource: '/pods', verbs: ['list'], file: 'reconciler/day2/member-pods.ts', call: "('GET', resourcePath('v1', 'Pod', namespace)" },
    { resource: '/pods/log', verbs: ['get'], file: 'reconciler/day2/member-replacement.ts', call: "request<unknown>('GET', `${resourcePath('v1', 'Pod', namespace, p.metadata.name)}/log`" },
    { resource: '/pods', verbs: ['delete'], file: 'reconciler/core/execute-writes.ts', call: "request('DELETE', resourcePath('v1', 'Pod', namespace, pod.name)" },
    { resource: '/persistentvolumeclaims', verbs: ['get'], file: 'reconciler/day2/storage-step.ts', call: "getOrUndefined<ClaimObject>(client, resourcePath('v1', 'PersistentVolumeClaim', namespace, name))" },
    { resource: '/persistentvolumeclaims', verbs: ['list'], file: 'reconciler/day2/restore-source.ts', call: "resourcePath('v1', 'PersistentVolumeClaim', " },
    { resource: '/persistentvolumeclaims', verbs: ['patch'], file: 'reconciler/core/execute-writes.ts', call: "request('PATCH', resourcePath('v1', 'PersistentVolumeClaim', namespace, write.claim)" },
    { resource: '/persistentvolumeclaims', verbs: ['delete'], file: 'reconciler/core/execute-writes.ts', call: "request('DELETE', resourcePath('v1', 'PersistentVolumeClaim', namespace, action.claim.name)" },
    { resource: 'storage.k8s.io/storageclasses', verbs: ['get'], file: 'reconciler/day2/storage-step.ts', call: '`/apis/storage.k8s.io/v1/storageclasses/${encodeURIComponent(name)}`' },
    { resource: 'storage.k8s.io/storageclasses', verbs: ['list'], file: 'reconciler/day2/storage-step.ts', call: "('GET', '/apis/storage.k8s.io/v1/storageclasses')" },
    { resource: 'snapshot.storage.k8s.io/volumesnapshots', verbs: ['get'], file: 'reconciler/day2/restore-source.ts', call: "('GET', `${VOLUME_SNAPSHOTS}/namespaces/" },
    { resource: '/events', verbs: ['create'], file: 'reconciler/process/events.ts', call: "request('POST', resourcePath('v1', 'Event', namespace)" },
    { resource: 'example.com/distributedkvs', verbs: ['update'], file: 'conversion/storage-migration.ts', call: "request('PUT', path" },
    { resource: 'apiextensions.k8s.io/customresourcedefinitions', verbs: ['get'], file: 'conversion/certificate-rotation.ts', call: "request('GET', CRD_PATH)" },
    { resource: 'apiextensions.k8s.io/customresourcedefinitions', verbs: ['patch'], file: 'conversion/certificate-rotation.ts', call: "request('PATCH', CRD_PATH" },
    { resource: 'apiextensions.k8s.io/customresourcedefinitions/status', verbs: ['patch'], file: 'conversion/storage-migration.ts', call: "request('PATCH', `${CRD_PATH}/status`" },
    // spec.tls.mode cert-manager: the Certificates are generated but not cached (their CRDs may be absent): read by name, applied (created if absent).
    { resource: 'cert-manager.io/certificates', verbs: ['get'], file: 'reconciler/core/read-object.ts', call: "request<CachedObject>('GET', resourcePath(object.apiVersion, object.kind, object.metadata.namespace, object.metadata.name)" },
    { resource: 'cert-manager.io/certificates', verbs: ['create', 'patch'], file: 'reconciler/core/execute-writes.ts', call: 'ctx.client.apply<CachedObject>(body, { fieldManager, force: true })' },
  ];

  it.each(USES)('grant $verbs on $resource, which $file calls for', ({ resource, verbs, file, call }) => {
    const [apiGroup, ...name] = resource.split('/');
    expect([...verbsOn(rules, apiGroup, name.join('/'))]).toEqual(expect.arrayContaining(verbs));
    expect(source(file)).toContain(call);
  });

  it('grant nothing else', () => {
    const cachedOrGenerated = new Set([{ apiVersion: API_VERSION, kind: KIND }, ...OWNED_KINDS, ...OBSERVED_KINDS].map((k) => `${group(k.apiVersion)}/${plural(k.apiVersion, k.kind)}`));
    const readAlongsideList = new Set(['example.com/distributedkvs:get', 'example.com/distributedkvs/status:get']);
    // Issued, not generated: cached (list, watch) and created, nothing more.
    const issued = new Set(ISSUED_KINDS.map((k) => `${group(k.apiVersion)}/${plural(k.apiVersion, k.kind)}`));
    const explained = new Set(USES.flatMap((u) => u.verbs.map((v) => `${u.resource}:${v}`)));
    for (const rule of rules) {
      for (const resource of rule.resources) {
        const key = `${rule.apiGroups[0]}/${resource}`;
        for (const verb of rule.verbs) {
          const ok = (cachedOrGenerated.has(key) && ['get', 'list', 'watch', 'create', 'patch', 'delete'].includes(verb)) || (issued.has(key) && ['list', 'watch'].includes(verb))
            || explained.has(`${key}:${verb}`) || readAlongsideList.has(`${key}:${verb}`);
          expect({ grant: `${key}:${verb}`, needed: ok }).toEqual({ grant: `${key}:${verb}`, needed: true });
        }
      }
    }
    expect(rules).toEqual(CONTROLLER_RULES);
  });

  it('let the controller hold Leases only in its own namespace: create, get, list, update and delete', () => {
    const role = one(objects, 'Role', 'dkv-controller-leader-election');
    expect(role.metadata.namespace).toBe('dkv-system');
    expect(role.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'update', 'delete'] },
    ]);
    const binding = one(objects, 'RoleBinding', role.metadata.name);
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
    expect(binding.metadata.namespace).toBe(role.metadata.namespace);
    // The elector's calls: GET and PUT of the Lease by name, POST to create it.
    const elector = source('kube/leader.ts');
    for (const call of ["request<Lease>('GET', this.path", "request<Lease>('POST', resourcePath(LEASE_API, 'Lease', namespace)", "request<Lease>('PUT', this.path"]) expect(elector).toContain(call);
    // Shard membership's: GET, POST and PUT of its own Lease (named after the replica), a LIST of its group's, DELETE of dead ones.
    const membership = source('kube/shard-membership.ts');
    for (const call of ["request('DELETE', `${LEASES}/${namespace}/leases/${lease.metadata.name}`", "request<ShardLease>('GET', path)", "request<ShardLease>('POST', `${LEASES}/${namespace}/leases`", "request<ShardLease>('PUT', path", "request<{ items: ShardLease[] }>('GET', `${LEASES}/${namespace}/leases`"]) expect(membership).toContain(call);
  });

});

describe('the backup runner\'s ClusterRole', () => {
  it('lets a runner cut, read, list and delete VolumeSnapshots and read the StatefulSet, and is bound by nothing in the bundle', () => {
    const objects = bundle();
    const role = one(objects, 'ClusterRole', 'dkv-backup-runner');
    expect(role.rules).toEqual(BACKUP_RUNNER_RULES);
    expect(verbsOn(role.rules!, 'snapshot.storage.k8s.io', 'volumesnapshots')).toEqual(new Set(['create', 'get', 'list', 'delete']));
    expect(verbsOn(role.rules!, 'apps', 'statefulsets')).toEqual(new Set(['get']));
    expect(objects.filter((o) => (o.roleRef as any)?.name === 'dkv-backup-runner')).toEqual([]);
  });
});

describe('the rest of the bundle', () => {
  it('creates the namespace first and the CRD before anything of its kind, the same CRD as dist/', () => {
    const objects = bundle();
    expect(objects.map((o) => o.kind).slice(0, 2)).toEqual(['Namespace', 'CustomResourceDefinition']);
    // The restricted standard enforced on the namespace, for any pod in it, not only met by the controller's.
    expect(one(objects, 'Namespace').metadata.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' });
    expect(one(objects, 'CustomResourceDefinition')).toEqual(customResourceDefinition(DEFAULT_CONFIG));
    expect(parse(readFileSync(join(ROOT, 'dist', 'distributedkvs.example.com.crd.k8s.yaml'), 'utf8'))).toEqual(one(objects, 'CustomResourceDefinition'));
  });

  it('admits to the controller\'s pods only the API server\'s webhook calls (from anywhere: its addresses are no pod\'s) and scrapers from the metrics namespaces; none with NetworkPolicies off', () => {
    const policy = one(bundle(), 'NetworkPolicy');
    expect(policy.metadata).toMatchObject({ name: 'dkv-controller', namespace: 'dkv-system' });
    expect(policy.spec.podSelector).toEqual({ matchLabels: one(bundle(), 'Deployment').spec.selector.matchLabels });
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toEqual([
      { ports: [{ port: DEFAULT_CONFIG.conversion.port, protocol: 'TCP' }] },
      { from: [{ namespaceSelector: DEFAULT_CONFIG.networkPolicy.metricsNamespaceSelector }], ports: [{ port: 8080, protocol: 'TCP' }] },
    ]);
    // Every port the controller listens on is one of the two.
    const listening = container(bundle()).ports.map((p: { containerPort: number }) => p.containerPort).sort((a: number, b: number) => a - b);
    expect(policy.spec.ingress.map((rule: { ports: { port: number }[] }) => rule.ports[0].port).sort((a: number, b: number) => a - b)).toEqual(listening);
    expect(bundle({ configFile: writeConfig('networkPolicy:\n  enabled: false\n') }).filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
  });

  it('ships a configuration that loads as the built-in one', () => {
    const text = one(bundle(), 'ConfigMap').data!['dkv.config.yaml'];
    const { file: _file, ...loaded } = loadConfig(writeConfig(text));
    const { file: _default, ...defaults } = DEFAULT_CONFIG;
    expect(loaded).toEqual(defaults);
  });
});

/** A configuration file in a fresh directory. */
function writeConfig(text: string): string {
  const file = join(temporaryDirectory('dkv-install-'), 'dkv.config.yaml');
  writeFileSync(file, text);
  return file;
}

describe('dkv install options', () => {
  it('--namespace puts every namespaced object, the bindings\' subjects and the Lease there', () => {
    const objects = bundle({ namespace: 'ops' });
    expect(one(objects, 'Namespace').metadata.name).toBe('ops');
    const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
    for (const o of objects.filter((o) => !clusterScoped.includes(o.kind))) expect(o.metadata.namespace).toBe('ops');
    for (const binding of objects.filter((o) => o.subjects)) expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'dkv-controller', namespace: 'ops' }]);
    // The admission policy narrows the writes of the ServiceAccount in that namespace.
    expect(JSON.stringify(one(objects, 'ValidatingAdmissionPolicy').spec.matchConditions)).toContain('system:serviceaccount:ops:dkv-controller');
  });

  it('--image sets the controller\'s image and the shipped configuration\'s runner image, unless --config names a runner of its own', () => {
    const image = 'ghcr.io/acme/dkv:0.2.0';
    const objects = bundle({ image });
    expect(container(objects).image).toBe(image);
    expect(parse(one(objects, 'ConfigMap').data!['dkv.config.yaml']).backup.runner.image).toBe(image);
    const own = bundle({ image, configFile: writeConfig('backup:\n  runner:\n    image: ghcr.io/acme/runner:7\n') });
    expect(container(own).image).toBe(image);
    expect(parse(one(own, 'ConfigMap').data!['dkv.config.yaml']).backup.runner.image).toBe('ghcr.io/acme/runner:7');
    // Without --image, a configuration's runner image is the controller's too.
    expect(container(bundle({ configFile: writeConfig('backup:\n  runner:\n    image: ghcr.io/acme/dkv:9\n') })).image).toBe('ghcr.io/acme/dkv:9');
  });

  it('--namespace is where the clusters\' NetworkPolicies admit the controller from (the shipped configuration names it), unless --config names a namespace of its own', () => {
    const shipped = (objects: Manifest[]) => parse(one(objects, 'ConfigMap').data!['dkv.config.yaml']).networkPolicy.controller;
    expect(shipped(bundle()).namespaceSelector).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': 'dkv-system' } });
    const moved = shipped(bundle({ namespace: 'ops' }));
    expect(moved.namespaceSelector).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': 'ops' } });
    expect(moved.podSelector).toEqual(DEFAULT_CONFIG.networkPolicy.controller.podSelector);
    const own = bundle({ namespace: 'ops', configFile: writeConfig('networkPolicy:\n  controller:\n    namespaceSelector: { matchLabels: { team: platform } }\n') });
    expect(shipped(own).namespaceSelector).toEqual({ matchLabels: { team: 'platform' } });
  });

  it('grants the controller every verb it uses on NetworkPolicies, the kind it generates beside the PodDisruptionBudget', () => {
    expect([...verbsOn(one(bundle(), 'ClusterRole', 'dkv-controller').rules!, 'networking.k8s.io', 'networkpolicies')].sort()).toEqual(['create', 'delete', 'get', 'list', 'patch', 'watch']);
    expect(OWNED_KINDS).toContainEqual({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' });
  });

  it('--replicas sets the Deployment\'s replicas; the disruption budget still lets a single replica drain', () => {
    expect(one(bundle({ replicas: 3 }), 'Deployment').spec.replicas).toBe(3);
    const single = bundle({ replicas: 1 });
    expect(one(single, 'Deployment').spec.replicas).toBe(1);
    expect(one(single, 'PodDisruptionBudget').spec).toMatchObject({ maxUnavailable: 1 });
  });

  it('--watch-namespace becomes the controller\'s --namespace, with its role bound in that namespace only and the cluster-scoped rules apart', () => {
    const objects = bundle({ watchNamespace: 'shop' });
    expect(controllerArgs(objects).namespace).toBe('shop');
    expect(controllerArgs(bundle()).namespace).toBeUndefined();
    const binding = one(objects, 'RoleBinding', 'dkv-controller');
    expect(binding.metadata.namespace).toBe('shop');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'dkv-controller' });
    expect(objects.filter((o) => o.kind === 'ClusterRoleBinding' && o.roleRef.name === 'dkv-controller')).toEqual([]);
    const clusterScoped = one(objects, 'ClusterRole', 'dkv-controller-cluster-scoped');
    expect(clusterScoped.rules).toEqual([
      { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list'] },
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['distributedkvs.example.com'], verbs: ['get', 'patch'] },
      { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions/status'], resourceNames: ['distributedkvs.example.com'], verbs: ['patch'] },
    ]);
    expect(one(objects, 'ClusterRoleBinding', 'dkv-controller-cluster-scoped').roleRef.name).toBe('dkv-controller-cluster-scoped');
  });

  it('--finalizer-policy adds, last, an admission policy that puts the configured final-backup finalizer on clusters with backups at creation, bound where the controller watches', () => {
    const kinds = ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'];
    expect(bundle().filter((o) => kinds.includes(o.kind))).toEqual([]);
    const objects = bundle({ finalizerPolicy: true });
    expect(objects.slice(-2).map((o) => o.kind)).toEqual(kinds);
    const policy = one(objects, 'MutatingAdmissionPolicy');
    expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([{ apiGroups: [group(API_VERSION)], apiVersions: ['*'], operations: ['CREATE'], resources: [plural(API_VERSION, KIND)] }]);
    expect(policy.spec.failurePolicy).toBe('Ignore');
    const finalizer = loadConfig(DEFAULT_CONFIG_FILE).backup.final.finalizer;
    expect(policy.spec.mutations[0].applyConfiguration.expression).toContain(JSON.stringify(finalizer));
    expect(policy.spec.matchConditions[0].expression).toContain('has(object.spec.backup)');
    // Another configured finalizer is the one the policy adds.
    const renamed = one(bundle({ finalizerPolicy: true, configFile: writeConfig('backup:\n  final:\n    finalizer: acme.io/last-backup\n') }), 'MutatingAdmissionPolicy');
    expect(renamed.spec.mutations[0].applyConfiguration.expression).toContain('"acme.io/last-backup"');
    expect(one(objects, 'MutatingAdmissionPolicyBinding').spec).toEqual({ policyName: policy.metadata.name });
    expect(one(bundle({ finalizerPolicy: true, watchNamespace: 'shop' }), 'MutatingAdmissionPolicyBinding').spec).toEqual({
      policyName: policy.metadata.name,
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } } },
    });
  });
});

describe('dkv install', () => {
  it('writes byte-identical output on every run, wherever it runs, equal to the committed deploy/', () => {
    const first = temporaryDirectory();
    const second = temporaryDirectory();
    expect(dkv(['install', '--out', join(first, 'deploy')]).status).toBe(0);
    expect(dkv(['install', '--out', 'deploy'], second).status).toBe(0);
    expect(readTree(first)).toEqual(readTree(second));
    const written = readFileSync(join(first, 'deploy', INSTALL_FILE), 'utf8');
    expect(written).toBe(readFileSync(join(ROOT, 'deploy', INSTALL_FILE), 'utf8'));
    expect(written.split('\n')[0]).toBe('# Generated by dkv install; do not edit.');
    expect(parseAllDocuments(written).map((d) => d.toJS())).toEqual(renderInstall());
  }, CLI_TIMEOUT_MS);

  it('records its options in the first line, the configuration file relative to the output directory', () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, 'my.yaml'), 'controller:\n  leaseName: other\n');
    expect(dkv(['install', '--out', 'out', '--namespace', 'ops', '--replicas', '3', '--watch-namespace', 'shop', '--config', 'my.yaml', '--finalizer-policy'], dir).status).toBe(0);
    expect(readFileSync(join(dir, 'out', INSTALL_FILE), 'utf8').split('\n')[0]).toBe('# Generated by dkv install --namespace=ops --replicas=3 --watch-namespace=shop --finalizer-policy --config="../my.yaml"; do not edit.');
  }, CLI_TIMEOUT_MS);

  it('prints its usage for --help and exits 0', () => {
    const result = dkv(['install', '--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^usage: dkv install --out <dir>/);
    expect(dkv(['--help']).stdout).toContain('dkv install --out <dir>');
  }, CLI_TIMEOUT_MS);

  it.each([
    [['--namespace', 'ops'], '--out: is required'],
    [['--out', 'x', '--replicas', '0'], '--replicas: must be an integer at least 1 (got "0")'],
    [['--out', 'x', '--replicas', 'two'], '--replicas: must be an integer at least 1 (got "two")'],
    [['--out', 'x', '--replicas', '1.5'], '--replicas: must be an integer at least 1 (got "1.5")'],
    [['--out', 'x', '--namespace', 'Ops_1'], '--namespace: must be a namespace name'],
    [['--out', 'x', '--namespace', 'a'.repeat(64)], '--namespace: must be a namespace name'],
    [['--out', 'x', '--watch-namespace=-shop'], '--watch-namespace: must be a namespace name'],
    [['--out', 'x', '--image', 'acme/dkv:1.0 --privileged'], '--image: must be an image reference'],
    [['--out', 'x', '--image', 'ACME/dkv'], '--image: must be an image reference'],
    [['--out', 'x', '--image', 'acme/dkv@sha256:abc'], '--image: must be an image reference'],
    [['--out', 'x', '--replica', '2'], "Unknown option '--replica'"],
  ])('refuses %j as a usage error naming the flag, writing nothing', (args, message) => {
    const dir = temporaryDirectory();
    const result = dkv(['install', ...args], dir);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain('usage: dkv install');
    expect(existsSync(join(dir, 'x'))).toBe(false);
  }, CLI_TIMEOUT_MS);

  it('refuses a configuration with problems naming its file and field (exit 1), writing nothing', () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, 'bad.yaml'), 'ports:\n  client: 2379\n  peer: 2379\n');
    const result = dkv(['install', '--out', 'x', '--config', 'bad.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('bad.yaml: ports.peer: must differ from ports.client');
    expect(existsSync(join(dir, 'x'))).toBe(false);
  }, CLI_TIMEOUT_MS);
});
