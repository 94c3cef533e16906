import { App, Chart, JsonPatch, type IResolver, type ResolutionContext, Testing } from 'cdk8s';
import { API_VERSION, KIND } from '../../api/validate.js';
import { probeSpecs } from '../../api/config-probes.js';
import type { GeneratorConfig } from '../../api/config.js';
import { DistributedKVCluster } from '../../constructs/distributed-kv.js';
import { KVDisruptionBudget } from '../../constructs/disruption-budget.js';
import { DistributedKVChart, synthesizeCluster, type SynthesisOptions } from '../../constructs/synthesize.js';
import type { MembershipPlan } from '../../engines/index.js';
import { fleetSpec } from '../support/fleet-specs.js';
import { DEFAULT_CONFIG, validResource } from './support.js';

/** What cdk8s itself renders for the cluster: the chart in an App of a cdk8s user's, through the L1 classes. */
function throughCdk8s(resource: ReturnType<typeof validResource>, config: GeneratorConfig, membership?: MembershipPlan, options?: SynthesisOptions) {
  return Testing.synth(new DistributedKVChart(Testing.app(), resource.metadata.name, resource, config, membership, options));
}

const GENERIC: GeneratorConfig = { ...DEFAULT_CONFIG, engine: 'generic' };
/** Every kind patched, so the configured patches run after both renderings. */
const PATCHED: GeneratorConfig = {
  ...DEFAULT_CONFIG,
  patches: {
    StatefulSet: [{ op: 'add', path: '/spec/template/spec/hostPID', value: false }, { op: 'add', path: '/spec/minReadySeconds', value: 5 }],
    Service: [{ op: 'add', path: '/spec/publishNotReadyAddresses', value: true }],
    PodDisruptionBudget: [{ op: 'replace', path: '/spec/unhealthyPodEvictionPolicy', value: 'IfHealthyBudget' }],
  },
};

function document(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: 'shop' }, spec };
}

describe('synthesizeCluster renders its own objects without cdk8s resolving each value, and exactly as cdk8s does', () => {
  it.each([
    ['the default configuration', DEFAULT_CONFIG],
    ['the generic engine', GENERIC],
    ['a configuration with patches', PATCHED],
  ])('for every probe shape (size, backup, storage, resources) with %s', (_name, config) => {
    const probes = probeSpecs(config);
    expect(probes.length).toBeGreaterThan(30);
    for (const { resource } of probes) expect(synthesizeCluster(resource, config)).toEqual(throughCdk8s(resource, config));
  });

  it('for 60 clusters of the benchmark fleet, on both engines', () => {
    for (let i = 0; i < 60; i++) {
      for (const [engine, config] of [['etcd', DEFAULT_CONFIG], ['generic', GENERIC]] as const) {
        const resource = validResource(document(`kv-${i}`, fleetSpec(i, `kv-${i}`, 'shop', engine)), config);
        expect(synthesizeCluster(resource, config)).toEqual(throughCdk8s(resource, config));
      }
    }
  });

  it('for what only the controller renders: a membership step, suspended backups, volumes still growing, restores', () => {
    const backup = { s3Path: 's3://acme/shop/orders', schedule: '0 2 * * *' };
    const cases: [Record<string, unknown>, MembershipPlan | undefined, SynthesisOptions][] = [
      [{ size: 5, image: 'registry.k8s.io/etcd:3.6.8-0', backup }, { replicas: 4, state: 'existing', members: [0, 1, 3, 4] }, { backupsSuspended: true }],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup, storage: { size: '20Gi' } }, { replicas: 3, state: 'existing' }, { backupsSuspended: false, volumeSizeNow: '10Gi' }],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', restore: { from: 's3://acme/shop/orders/20260101T020000.000Z/' } }, undefined, {}],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', restore: { from: 'orders-snapshot' } }, undefined, {}],
    ];
    for (const [spec, membership, options] of cases) {
      const resource = validResource(document('orders', spec));
      expect(synthesizeCluster(resource, DEFAULT_CONFIG, membership, options)).toEqual(throughCdk8s(resource, DEFAULT_CONFIG, membership, options));
    }
  });
  it('for every TLS shape: the member and client Secrets\' volumes and mounts, the https arguments, a running cluster kept plain, a withheld NetworkPolicy', () => {
    const backup = { s3Path: 's3://acme/shop/orders', schedule: '0 2 * * *' };
    const restore = { from: 's3://acme/shop/orders/20260101T020000.000Z/' };
    const cases: [Record<string, unknown>, SynthesisOptions][] = [
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup, restore }, {}],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup, tls: { peer: { enabled: false } } }, {}],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup, tls: { client: { enabled: false } } }, {}],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup, tls: { mode: 'disabled' } }, {}],
      [{ size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup }, { liveTls: { peer: false, client: false }, networkPolicyWithheld: true }],
    ];
    const volumes = (objects: Record<string, any>[]) => objects.flatMap((o) => (o.spec?.template?.spec?.volumes ?? o.spec?.jobTemplate?.spec?.template?.spec?.volumes ?? []).map((v: any) => v.name));
    const rendered = cases.map(([spec, options]) => {
      const resource = validResource(document('orders', spec));
      const plain = synthesizeCluster(resource, DEFAULT_CONFIG, undefined, options);
      expect(plain).toEqual(throughCdk8s(resource, DEFAULT_CONFIG, undefined, options));
      return plain as Record<string, any>[];
    });
    // Not equal by being empty: the TLS shapes do render the Secrets, the plain ones do not.
    expect(volumes(rendered[0])).toEqual(['member-tls', 'client-tls']);
    expect(volumes(rendered[1])).toEqual(['member-tls', 'client-tls']);
    expect(volumes(rendered[3])).toEqual([]);
    expect(volumes(rendered[4])).toEqual([]);
    expect(rendered[4].some((o) => o.kind === 'NetworkPolicy')).toBe(false);
  });
});

describe('a DistributedKVCluster in a cdk8s user\'s own App renders through cdk8s, so what the user adds applies', () => {
  const resource = validResource(document('orders', { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' }));

  it('applies the App\'s resolvers to its objects', () => {
    const mirror: IResolver = {
      resolve(context: ResolutionContext) {
        if (context.value === 'registry.k8s.io/etcd:3.6.8-0') context.replaceValue('mirror.example.com/etcd:3.6.8-0');
      },
    };
    const chart = new Chart(new App({ resolvers: [mirror] }), 'shop', { namespace: 'shop' });
    new DistributedKVCluster(chart, 'orders', { name: 'orders', spec: resource.spec, config: DEFAULT_CONFIG });
    const statefulSet = chart.toJson().find((o) => o.kind === 'StatefulSet');
    expect(statefulSet.spec.template.spec.containers[0].image).toBe('mirror.example.com/etcd:3.6.8-0');
  });

  it('applies a JSON patch the user adds to one of its objects', () => {
    const chart = new Chart(Testing.app(), 'shop', { namespace: 'shop' });
    const cluster = new DistributedKVCluster(chart, 'orders', { name: 'orders', spec: resource.spec, config: DEFAULT_CONFIG });
    const budget = cluster.node.findAll().find((c): c is KVDisruptionBudget => c instanceof KVDisruptionBudget)!;
    budget.apiObject.addJsonPatch(JsonPatch.add('/metadata/labels/team', 'payments'));
    expect(chart.toJson().find((o) => o.kind === 'PodDisruptionBudget').metadata.labels.team).toBe('payments');
  });
});
