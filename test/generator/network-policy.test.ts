/**
 * The NetworkPolicy every cluster gets: for each of the members' ports, who
 * may reach it. Only what the objects say is checked here; no network plugin
 * enforces it on the test plane (docs/network-policy.md).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { renderInstall } from '../../cli/install-command.js';
import { generatedNames } from '../../constructs/name-clashes.js';
import { BACKUP, byRole, DEFAULT_CONFIG, kvDocument, removeTemporaryDirectories, selects, synth, temporaryDirectory, validResource, type ClusterOptions, type Manifest } from './support.js';

afterAll(removeTemporaryDirectories);

interface Peer {
  podSelector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  namespaceSelector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
}
interface Rule { from: Peer[]; ports: { port: number; protocol: string }[] }

function policyOf(objects: readonly Manifest[]): Manifest {
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  expect(policies).toHaveLength(1);
  return policies[0];
}

/** Who may reach `port`: the peers of the rules that name it (every rule names one port). */
function peersOf(policy: Manifest, port: number): Peer[] {
  const rules = (policy.spec.ingress as Rule[]).filter((r) => r.ports.some((p) => p.port === port));
  expect(rules).toHaveLength(1);
  expect(rules[0].ports).toEqual([{ port, protocol: 'TCP' }]);
  return rules[0].from;
}

const { client, peer, metrics } = DEFAULT_CONFIG.ports;
const withConfig = (overrides: Partial<GeneratorConfig>): GeneratorConfig => ({ ...loadDefaultConfig(), ...overrides });
const networkPolicyConfig = (overrides: Partial<GeneratorConfig['networkPolicy']>): GeneratorConfig => withConfig({ networkPolicy: { ...DEFAULT_CONFIG.networkPolicy, ...overrides } });

describe('the NetworkPolicy of a cluster', () => {
  const objects = synth({ backup: BACKUP });
  const policy = policyOf(objects);
  const { statefulSet, cronJob } = byRole(objects);
  const memberLabels = statefulSet.spec.template.metadata.labels;
  const backupLabels = cronJob!.spec.jobTemplate.spec.template.metadata.labels;

  it('governs exactly the member pods, for ingress only, and admits something on each of their three ports only', () => {
    expect(policy.spec.podSelector).toEqual(statefulSet.spec.selector);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.egress).toBeUndefined();
    const ports = (policy.spec.ingress as Rule[]).flatMap((r) => r.ports.map((p) => p.port)).sort();
    const containerPorts = statefulSet.spec.template.spec.containers[0].ports.map((p: { containerPort: number }) => p.containerPort).sort();
    expect(ports).toEqual(containerPorts);
    expect(ports).toEqual([client, peer, metrics].sort());
  });

  it('admits to the peer port the cluster\'s own members and no one else: not its backup Jobs, not other namespaces', () => {
    const peers = peersOf(policy, peer);
    expect(peers).toEqual([{ podSelector: { matchLabels: statefulSet.spec.selector.matchLabels } }]);
    expect(selects(peers[0].podSelector!.matchLabels!, memberLabels)).toBe(true);
    expect(selects(peers[0].podSelector!.matchLabels!, backupLabels)).toBe(false);
    const otherCluster = byRole(synth({ name: 'carts' })).statefulSet.spec.template.metadata.labels;
    expect(selects(peers[0].podSelector!.matchLabels!, otherCluster)).toBe(false);
  });

  it('admits to the client port every pod of the cluster\'s namespace by default, its backup Jobs and the controller in its own namespace', () => {
    const peers = peersOf(policy, client);
    expect(peers).toContainEqual({ podSelector: {} });
    const backups = peers.filter((p) => p.podSelector?.matchLabels && selects(p.podSelector.matchLabels, backupLabels) && !p.namespaceSelector);
    expect(backups).toHaveLength(1);
    expect(selects(backups[0].podSelector!.matchLabels!, memberLabels)).toBe(false);
    const controller = peers.filter((p) => p.namespaceSelector);
    expect(controller).toEqual([{ namespaceSelector: DEFAULT_CONFIG.networkPolicy.controller.namespaceSelector, podSelector: DEFAULT_CONFIG.networkPolicy.controller.podSelector }]);
  });

  it('names the controller as the install bundle runs it: its namespace (by the namespace\'s name label) and its pods\' labels', () => {
    const bundle = renderInstall();
    const deployment = bundle.find((o) => o.kind === 'Deployment')! as Manifest;
    const controller = peersOf(policy, client).find((p) => p.namespaceSelector)!;
    expect(controller.namespaceSelector).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': deployment.metadata.namespace } });
    expect(selects(controller.podSelector!.matchLabels!, deployment.spec.template.metadata.labels)).toBe(true);
  });

  it('admits to the metrics port every pod of the namespaces the configuration names (by default those labelled dkv.example.com/monitoring=true), and none of the cluster\'s own namespace', () => {
    expect(peersOf(policy, metrics)).toEqual([{ namespaceSelector: { matchLabels: { 'dkv.example.com/monitoring': 'true' } } }]);
    const scrapers = { matchExpressions: [{ key: 'team', operator: 'In', values: ['observability', 'sre'] }] } as const;
    expect(peersOf(policyOf(synth({}, networkPolicyConfig({ metricsNamespaceSelector: scrapers }))), metrics)).toEqual([{ namespaceSelector: scrapers }]);
  });

  it('follows the configured ports', () => {
    const ports = { client: 12379, peer: 12380, metrics: 12381 };
    const moved = policyOf(synth({}, withConfig({ ports })));
    expect(peersOf(moved, ports.peer)).toHaveLength(1);
    expect(peersOf(moved, ports.client)).toContainEqual({ podSelector: {} });
    expect(peersOf(moved, ports.metrics)).toHaveLength(1);
  });

  it('takes its name, labels and annotations from the configuration like every other object', () => {
    const config = withConfig({ names: { ...DEFAULT_CONFIG.names, networkPolicy: 'kv-{name}-ingress' }, annotations: { 'team.example.com/owner': 'storage' } });
    const renamed = policyOf(synth({}, config));
    expect(renamed.metadata.name).toBe('kv-orders-ingress');
    expect(renamed.metadata.namespace).toBe('shop');
    expect(renamed.metadata.labels).toEqual(byRole(synth({}, config)).statefulSet.metadata.labels);
    expect(renamed.metadata.annotations).toMatchObject({ 'team.example.com/owner': 'storage' });
  });

  it('takes the configured patches for NetworkPolicy', () => {
    const config = withConfig({ patches: { NetworkPolicy: [{ op: 'add', path: '/spec/policyTypes/-', value: 'Egress' }] } });
    expect(policyOf(synth({}, config)).spec.policyTypes).toEqual(['Ingress', 'Egress']);
  });
});

describe('spec.networkPolicy.clients', () => {
  const clients = [
    { podSelector: { matchLabels: { app: 'checkout' } } },
    { namespaceSelector: { matchLabels: { team: 'payments' } } },
    { namespaceSelector: { matchLabels: { team: 'search' } }, podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['api'] }] } },
  ];

  it('replaces the default (every pod of the namespace) with exactly the peers listed, beside the backup Jobs and the controller', () => {
    const objects = synth({ backup: BACKUP, networkPolicy: { clients } });
    const peers = peersOf(policyOf(objects), client);
    expect(peers).not.toContainEqual({ podSelector: {} });
    expect(peers.slice(0, 3)).toEqual(clients);
    expect(peers.slice(3)).toEqual(peersOf(policyOf(synth({ backup: BACKUP })), client).slice(1));
  });

  it('with an empty list, admits the backup Jobs and the controller only', () => {
    const peers = peersOf(policyOf(synth({ networkPolicy: { clients: [] } })), client);
    expect(peers).toHaveLength(2);
    expect(peers).not.toContainEqual({ podSelector: {} });
  });

  it('leaves the peer and metrics ports as they are', () => {
    const policy = policyOf(synth({ networkPolicy: { clients } }));
    const plain = policyOf(synth());
    expect(peersOf(policy, peer)).toEqual(peersOf(plain, peer));
    expect(peersOf(policy, metrics)).toEqual(peersOf(plain, metrics));
  });
});

describe('a cluster without a NetworkPolicy', () => {
  const cases: [string, ClusterOptions, GeneratorConfig][] = [
    ['the configuration turns them off (networkPolicy.enabled: false)', {}, networkPolicyConfig({ enabled: false })],
    ['its spec turns its own off (spec.networkPolicy.enabled: false)', { networkPolicy: { enabled: false } }, DEFAULT_CONFIG],
    ['the configuration is off, whatever the spec says', { networkPolicy: { enabled: true } }, networkPolicyConfig({ enabled: false })],
  ];

  it.each(cases)('when %s: no NetworkPolicy, every other object unchanged, and the name-clash check knows it', (_, options, config) => {
    const objects = synth(options, config);
    expect(objects.filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
    const withPolicy = synth({});
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(withPolicy.filter((o) => o.kind !== 'NetworkPolicy').map((o) => `${o.kind}/${o.metadata.name}`));
    expect(generatedNames(validResource(kvDocument(options), config), config).map((g) => g.kind)).not.toContain('NetworkPolicy');
  });

  it('is not the default: spec.networkPolicy.enabled: true or unset both generate one, named by generatedNames', () => {
    for (const options of [{}, { networkPolicy: { enabled: true } }]) {
      expect(synth(options).filter((o) => o.kind === 'NetworkPolicy')).toHaveLength(1);
      expect(generatedNames(validResource(kvDocument(options)), DEFAULT_CONFIG)).toContainEqual({ kind: 'NetworkPolicy', namespace: 'shop', name: 'orders', template: 'networkPolicy' });
    }
  });
});

describe('the networkPolicy configuration', () => {
  it('replaces a selector given in a file whole, and keeps the defaults of what the file leaves out', () => {
    const file = join(temporaryDirectory('dkv-netpol-config-'), 'dkv.config.yaml');
    writeFileSync(file, 'networkPolicy:\n  metricsNamespaceSelector:\n    matchExpressions: [{ key: team, operator: In, values: [sre] }]\n  controller:\n    podSelector: { matchLabels: { app: kv-operator } }\n');
    const config = loadConfig(file);
    expect(config.networkPolicy).toEqual({
      enabled: true,
      metricsNamespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['sre'] }] },
      controller: { namespaceSelector: DEFAULT_CONFIG.networkPolicy.controller.namespaceSelector, podSelector: { matchLabels: { app: 'kv-operator' } } },
    });
  });
});
