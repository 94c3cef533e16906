/**
 * The controller with monitoring on: it applies each etcd cluster's
 * PodMonitor where the Prometheus Operator's CRDs are installed, and where
 * they are not it reconciles the cluster without it and says so in the
 * `Monitoring` condition instead of failing every reconcile on a kind the
 * API server does not serve.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { servesKind } from '../../reconciler/core/served-kind.js';
import { CRD_MISSING_MESSAGE } from '../../reconciler/day2/pod-monitor-step.js';
import { createNamespace, describeWithCluster, eventually, installCrd, isApiError, testClient, untilGone } from '../cluster/kube.js';
import { establishCrd } from '../support/crds.js';
import { clusterPath, createCluster, startController, type RunningController } from '../integration/controller-harness.js';

const POD_MONITOR_CRD = 'podmonitors.monitoring.coreos.com';
const defaults = loadDefaultConfig();
/** The etcd engine (the generic one gets no PodMonitor): its members never run here, but every object is still applied. */
const config: GeneratorConfig = { ...defaults, engine: 'etcd', monitoring: { ...defaults.monitoring, enabled: true } };

function podMonitorCrd(): Record<string, any> {
  const file = join(packageRoot(), 'api', 'crds', 'prometheus-operator', 'v0.85.0', `monitoring.coreos.com_podmonitors.yaml`);
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS()).find(Boolean);
}

async function monitoringCondition(client: KubeClient, namespace: string, name: string, reason: string): Promise<any> {
  return eventually(`${name}'s Monitoring condition to say ${reason}`, async () => {
    const cr = await client.request('GET', clusterPath(namespace, name));
    const condition = cr.status?.conditions?.find((c: any) => c.type === 'Monitoring');
    return condition?.reason === reason ? condition : undefined;
  });
}

describeWithCluster('the controller with monitoring on', () => {
  let client: KubeClient;
  let namespace: string;
  let running: RunningController | undefined;

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
    // Another test file may have installed the Prometheus Operator's CRDs on the shared plane: this one starts without.
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${POD_MONITOR_CRD}`;
    try {
      await client.request('DELETE', crdPath);
    } catch (e) {
      if (!isApiError(e, 404)) throw e;
    }
    await untilGone(client, crdPath, POD_MONITOR_CRD);
    await eventually('PodMonitors to leave discovery', async () => ((await servesKind(client, 'monitoring.coreos.com/v1', 'podmonitors')) ? undefined : true));
    namespace = await createNamespace(client, 'pod-monitor');
  });

  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  it('reconciles a cluster without its PodMonitor where the kind is not served, and says why in the Monitoring condition', async () => {
    running = await startController(client, namespace, { config });
    await createCluster(client, namespace, 'orders', { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' });
    const condition = await monitoringCondition(client, namespace, 'orders', 'PodMonitorCRDMissing');
    expect(condition).toMatchObject({ status: 'False', message: CRD_MISSING_MESSAGE });
    await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, 'orders'));
  });

  it('applies the PodMonitor once the Prometheus Operator\'s CRD is installed, and reports it applied', async () => {
    await establishCrd(client, podMonitorCrd());
    // A controller started now asks discovery afresh (a running one within 30 s: served-kind.ts).
    running = await startController(client, namespace, { config });
    await monitoringCondition(client, namespace, 'orders', 'PodMonitorApplied');
    const monitor = await client.request('GET', resourcePath('monitoring.coreos.com/v1', 'PodMonitor', namespace, 'orders'));
    const statefulSet = await client.request('GET', resourcePath('apps/v1', 'StatefulSet', namespace, 'orders'));
    expect(monitor.spec.selector).toEqual(statefulSet.spec.selector);
    expect(monitor.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'DistributedKV', name: 'orders', controller: true });
  });
});
