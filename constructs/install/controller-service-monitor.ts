import { Construct } from 'constructs';
import { ServiceMonitor, ServiceMonitorSpecEndpointsScheme } from '../../imports/monitoring.coreos.com.js';
import type { GeneratorConfig } from '../../api/config.js';
import { METRICS_PORT_NAME } from '../../model/monitoring.js';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerServiceMonitorProps {
  /** The controller's namespace, labels and metrics Service. */
  readonly identity: ControllerIdentity;
  /** The monitoring section: the labels a Prometheus selects ServiceMonitors by, and the scrape interval. */
  readonly monitoring: GeneratorConfig['monitoring'];
}

/**
 * The Prometheus Operator's ServiceMonitor of the controller: Prometheus
 * scrapes every replica behind the metrics Service (ControllerMetricsService,
 * port `metrics`), the waiting ones too, so the alert on a controller that
 * answers but does not lead can tell the two apart. The scrape job is the
 * Service's name, by which the alert rules select the controller's series.
 * It honours the controller's own labels: a backup gauge's `namespace` is
 * its cluster's, not the controller's.
 */
export class ControllerServiceMonitor extends Construct {
  readonly apiObject: ServiceMonitor;

  constructor(scope: Construct, id: string, props: ControllerServiceMonitorProps) {
    super(scope, id);
    const { identity, monitoring } = props;
    this.apiObject = new ServiceMonitor(this, 'Resource', {
      metadata: { name: identity.name, namespace: identity.namespace, labels: { ...identity.labels, ...monitoring.labels } },
      spec: {
        selector: { matchLabels: { ...identity.labels } },
        namespaceSelector: { matchNames: [identity.namespace] },
        endpoints: [{ port: METRICS_PORT_NAME, path: '/metrics', scheme: ServiceMonitorSpecEndpointsScheme.HTTP, interval: monitoring.scrapeInterval, honorLabels: true }],
      },
    });
  }
}
