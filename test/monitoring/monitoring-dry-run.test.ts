/**
 * The monitoring objects against the Prometheus Operator's own API: its
 * PodMonitor, ServiceMonitor and PrometheusRule CRDs (the pinned copies the
 * types are imported from, api/crds/prometheus-operator/) installed on the
 * test control plane, and every object the generator and `dkv install
 * --monitoring` write applied server-side with dryRun: the API server
 * validates each against the CRD's schema and stores nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { renderInstall } from '../../cli/install-command.js';
import type { KubeClient } from '../../kube/client.js';
import type { KubeObject } from '../../model/kube-object.js';
import { createNamespace, describeWithCluster, isApiError, testClient } from '../cluster/kube.js';
import { establishCrd } from '../support/crds.js';
import { synth } from '../generator/support.js';

const CRD_ROOT = join(packageRoot(), 'api', 'crds', 'prometheus-operator');

function prometheusOperatorCrds(): Record<string, any>[] {
  const [version] = readdirSync(CRD_ROOT).filter((v) => v.startsWith('v'));
  const dir = join(CRD_ROOT, version);
  return readdirSync(dir).filter((f) => f.endsWith('.yaml')).flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
}

const monitoringOn: GeneratorConfig = { ...loadDefaultConfig(), monitoring: { ...loadDefaultConfig().monitoring, enabled: true, labels: { release: 'prometheus' } } };
const isMonitoring = (o: KubeObject) => o.apiVersion === 'monitoring.coreos.com/v1';

describeWithCluster('the monitoring objects, against the Prometheus Operator\'s CRDs', () => {
  let client: KubeClient;
  let namespace: string;

  beforeAll(async () => {
    client = testClient();
    for (const crd of prometheusOperatorCrds()) await establishCrd(client, crd);
    namespace = await createNamespace(client, 'monitoring');
  });

  const dryRun = (object: KubeObject) => client.apply({ ...object, metadata: { ...object.metadata, namespace } } as any, { fieldManager: 'dkv-test', dryRun: true });

  it('accepts the PodMonitor of a cluster with backups and TLS, as dkv synth writes it', async () => {
    const monitors = synth({ backup: { s3Path: 's3://acme-kv-backups/shop/orders', schedule: '0 2 * * *' } }, monitoringOn).filter(isMonitoring);
    expect(monitors.map((m) => m.kind)).toEqual(['PodMonitor']);
    const stored = await dryRun(monitors[0]);
    expect(stored.spec.podMetricsEndpoints).toEqual((monitors[0] as any).spec.podMetricsEndpoints);
    expect(stored.metadata.labels.release).toBe('prometheus');
  });

  it('accepts the ServiceMonitor and the PrometheusRule of dkv install --monitoring, every rule kept', async () => {
    const objects = renderInstall({ monitoring: true }).filter(isMonitoring);
    expect(objects.map((o) => o.kind).sort()).toEqual(['PrometheusRule', 'ServiceMonitor']);
    for (const object of objects) {
      const stored = await dryRun(object);
      expect(stored.spec).toEqual((object as any).spec);
    }
  });

  it('refuses a PodMonitor the CRD\'s schema does not allow (the dry run validates)', async () => {
    const [monitor] = synth({}, monitoringOn).filter(isMonitoring) as any[];
    const broken = { ...monitor, spec: { ...monitor.spec, podMetricsEndpoints: [{ ...monitor.spec.podMetricsEndpoints[0], scheme: 'gopher' }] } };
    const refusal = await dryRun(broken).then(() => undefined, (e: unknown) => e);
    expect(isApiError(refusal, 422)).toBe(true);
    expect((refusal as Error).message).toContain('scheme');
  });

  it('writes no monitoring object while monitoring is off (clusters without the Prometheus Operator)', () => {
    expect(synth({}, loadDefaultConfig()).filter(isMonitoring)).toEqual([]);
    expect(renderInstall({}).filter(isMonitoring)).toEqual([]);
  });
});
