/**
 * The static scrape jobs that stand in for the PodMonitor and the
 * ServiceMonitor where a test's Prometheus has no Kubernetes discovery
 * (test/support/monitor-scrape-jobs.ts): the target labels the Prometheus
 * Operator would give, and a refusal for what they cannot mirror.
 */
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { renderInstall } from '../../cli/install-command.js';
import { CLUSTER_LABEL } from '../../model/monitoring.js';
import { synth } from '../generator/support.js';
import { podMonitorScrapeJob, serviceMonitorScrapeJob } from '../support/monitor-scrape-jobs.js';

const defaults = loadDefaultConfig();
const config: GeneratorConfig = { ...defaults, monitoring: { ...defaults.monitoring, enabled: true } };

describe('the static scrape jobs that stand in for the monitors', () => {
  const podMonitor = synth({ name: 'orders', namespace: 'shop', size: 3 }, config).find((o) => o.kind === 'PodMonitor') as any;
  const pod = { pod: 'orders-0', container: 'etcd', address: '127.0.0.1:2381' };

  it('gives a PodMonitor\'s targets the labels the Prometheus Operator gives, its relabelings included', () => {
    expect(podMonitorScrapeJob(podMonitor, [pod])).toEqual({
      job_name: 'podMonitor/shop/orders/0', honor_labels: false, metrics_path: '/metrics', scheme: 'http',
      static_configs: [{ targets: ['127.0.0.1:2381'], labels: { namespace: 'shop', pod: 'orders-0', container: 'etcd', job: 'shop/orders', endpoint: 'metrics', [CLUSTER_LABEL]: 'orders' } }],
    });
  });

  it('gives a ServiceMonitor\'s targets the Service as their job, and honours the endpoint\'s honorLabels', () => {
    const serviceMonitor = (renderInstall({ monitoring: true }) as any[]).find((o) => o.kind === 'ServiceMonitor');
    const job = serviceMonitorScrapeJob(serviceMonitor, 'dkv-controller-metrics', 'dkv-system', [{ pod: 'dkv-controller-0', container: 'controller', address: '127.0.0.1:8080' }]);
    expect(job).toMatchObject({ honor_labels: true, static_configs: [{ labels: { job: 'dkv-controller-metrics', namespace: 'dkv-system', service: 'dkv-controller-metrics', endpoint: 'metrics' } }] });
  });

  it('refuses what it cannot mirror: a relabeling that reads the target\'s labels, a jobLabel', () => {
    const endpoint = podMonitor.spec.podMetricsEndpoints[0];
    const reading = { ...podMonitor, spec: { ...podMonitor.spec, podMetricsEndpoints: [{ ...endpoint, relabelings: [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: 'node' }] }] } };
    expect(() => podMonitorScrapeJob(reading, [pod])).toThrow('not a fixed replace');
    expect(() => podMonitorScrapeJob({ ...podMonitor, spec: { ...podMonitor.spec, jobLabel: 'app' } }, [pod])).toThrow('jobLabel');
  });
});
