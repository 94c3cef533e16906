/**
 * The monitoring switch (docs/monitoring.md): the configuration's
 * monitoring.enabled turns on, together, each etcd cluster's PodMonitor and
 * the install bundle's ServiceMonitor and alert rules; off (the default),
 * nothing of the Prometheus Operator's API is written, so a Kubernetes
 * cluster without its CRDs is unaffected.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { renderInstall } from '../../cli/install-command.js';
import { alertRuleGroups } from '../../constructs/install/alert-rules.js';
import { controllerIdentity } from '../../constructs/install/controller-identity.js';
import { CLUSTER_LABEL } from '../../model/monitoring.js';
import { decidePodMonitor } from '../../reconciler/day2/pod-monitor-step.js';
import { BACKUP, byRole, removeTemporaryDirectories, ROOT, synth, temporaryDirectory, type Manifest } from './support.js';

afterAll(removeTemporaryDirectories);

const defaults = loadDefaultConfig();
const on = (overrides: Partial<GeneratorConfig['monitoring']> = {}, engine: GeneratorConfig['engine'] = 'etcd'): GeneratorConfig => ({ ...defaults, engine, monitoring: { ...defaults.monitoring, enabled: true, ...overrides } });
const isMonitoring = (o: { apiVersion: string }) => o.apiVersion === 'monitoring.coreos.com/v1';

describe('monitoring off (the default)', () => {
  it('writes no object of the Prometheus Operator\'s API, for a cluster or in the install bundle', () => {
    expect(defaults.monitoring.enabled).toBe(false);
    expect(synth({ backup: BACKUP }).filter(isMonitoring)).toEqual([]);
    expect(renderInstall().filter(isMonitoring)).toEqual([]);
    const role = renderInstall().find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'dkv-controller') as Manifest;
    expect(JSON.stringify(role)).not.toContain('monitoring.coreos.com');
  });
});

describe('the PodMonitor of a cluster', () => {
  const objects = synth({ backup: BACKUP }, on({ labels: { release: 'prometheus' }, scrapeInterval: '15s' }));
  const [monitor] = objects.filter(isMonitoring) as Manifest[];
  const { statefulSet } = byRole(objects);

  it('selects exactly the member pods, with the StatefulSet\'s own selector, in the cluster\'s namespace', () => {
    expect(objects.filter(isMonitoring).map((o) => o.kind)).toEqual(['PodMonitor']);
    expect(monitor.metadata.namespace).toBe('shop');
    expect(monitor.spec.selector).toEqual(statefulSet.spec.selector);
    expect(monitor.spec.namespaceSelector).toBeUndefined();
  });

  it('scrapes the members\' plain-HTTP metrics port by the name their container gives it, and names the cluster on every series', () => {
    const ports = statefulSet.spec.template.spec.containers[0].ports as { name: string; containerPort: number }[];
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    expect(ports.find((p) => p.name === endpoint.port)?.containerPort).toBe(defaults.ports.metrics);
    expect(endpoint).toMatchObject({ scheme: 'http', path: '/metrics', interval: '15s' });
    expect(endpoint.relabelings).toEqual([{ action: 'replace', targetLabel: CLUSTER_LABEL, replacement: 'orders' }]);
  });

  it('carries the cluster\'s labels and the ones a Prometheus selects monitors by, and a desired-hash like every object', () => {
    expect(monitor.metadata.labels).toMatchObject({ ...statefulSet.metadata.labels, release: 'prometheus' });
    expect(monitor.metadata.annotations?.[defaults.hashAnnotation]).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is not written for the generic engine, whose server has no etcd metrics', () => {
    expect(synth({}, on({}, 'generic')).filter(isMonitoring)).toEqual([]);
  });
});

describe('dkv install --monitoring', () => {
  const objects = renderInstall({ monitoring: true }) as Manifest[];
  const identity = controllerIdentity();
  const metricsService = objects.find((o) => o.kind === 'Service' && o.metadata.name === identity.metricsServiceName)!;

  it('turns monitoring on in the configuration it ships, so the controller writes the PodMonitors', () => {
    const configMap = objects.find((o) => o.kind === 'ConfigMap')!;
    expect(Object.values(configMap.data as Record<string, string>)[0]).toMatch(/\nmonitoring:\n {2}enabled: true\n/);
  });

  it('adds a ServiceMonitor that selects the controller\'s metrics Service and port, honouring the controller\'s own labels', () => {
    const monitor = objects.find((o) => o.kind === 'ServiceMonitor')!;
    const selects = Object.entries(monitor.spec.selector.matchLabels as Record<string, string>).every(([k, v]) => metricsService.metadata.labels?.[k] === v);
    expect(selects).toBe(true);
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: [identity.namespace] });
    expect(metricsService.spec.ports.map((p: { name: string }) => p.name)).toContain(monitor.spec.endpoints[0].port);
    expect(monitor.spec.endpoints[0].honorLabels).toBe(true);
  });

  it('adds the alert rules, each with a summary, a description and a runbook section docs/monitoring.md has', () => {
    const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
    const rules = (rule.spec.groups as { rules: { alert: string; annotations: Record<string, string> }[] }[]).flatMap((g) => g.rules);
    expect(rules).toHaveLength(13);
    const docs = readFileSync(join(ROOT, 'docs', 'monitoring.md'), 'utf8');
    for (const r of rules) {
      expect(r.annotations.summary).toBeTruthy();
      expect(r.annotations.description).toBeTruthy();
      expect(r.annotations.runbook_url).toBe(`${defaults.monitoring.runbookUrl}#${r.alert.toLowerCase()}`);
      expect(docs).toContain(`\n### ${r.alert}\n`);
    }
  });

  it('grants the controller the PodMonitors it writes, and only then', () => {
    const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === identity.name)!;
    expect(role.rules).toContainEqual({ apiGroups: ['monitoring.coreos.com'], resources: ['podmonitors'], verbs: ['get', 'create', 'patch'] });
  });

  it('puts the rules where the configuration says, with the labels a Prometheus selects rules by', () => {
    const dir = temporaryDirectory();
    const file = join(dir, 'dkv.config.yaml');
    writeFileSync(file, 'monitoring:\n  enabled: true\n  ruleNamespace: monitoring\n  labels: { release: prometheus }\n');
    const rule = renderInstall({ configFile: file }).find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.metadata).toMatchObject({ namespace: 'monitoring', labels: { release: 'prometheus' } });
  });

  it('selects the controller\'s series by its metrics Service, the ServiceMonitor\'s job', () => {
    const controller = alertRuleGroups({ controller: identity, runbookUrl: 'https://x.example/m.md' }).find((g) => g.name === 'dkv-controller')!;
    for (const r of controller.rules) expect(r.expr).toContain(`job="${identity.metricsServiceName}"`);
  });
});

describe('the controller\'s PodMonitor decision', () => {
  it('applies it where the kind is served, withholds it with a False condition where not, and says nothing while monitoring is off', () => {
    expect(decidePodMonitor({ wanted: true, served: true })).toMatchObject({ withhold: false, condition: { status: 'True', reason: 'PodMonitorApplied' } });
    expect(decidePodMonitor({ wanted: true, served: false })).toMatchObject({ withhold: true, condition: { status: 'False', reason: 'PodMonitorCRDMissing' } });
    expect(decidePodMonitor({ wanted: false, served: undefined })).toEqual({ withhold: false });
  });
});
