import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerMetricsServiceProps {
  /** Its name, the controller pods' selector and the metrics port. */
  readonly identity: ControllerIdentity;
}

/**
 * A stable address for the controller's /metrics (a Prometheus
 * ServiceMonitor selects it by its labels and port name). Every replica
 * serves metrics, the waiting ones too: their cache and watch figures are
 * worth scraping, and reconcile counters then show which replica leads.
 */
export class ControllerMetricsService extends Construct {
  readonly apiObject: k8s.KubeService;

  constructor(scope: Construct, id: string, props: ControllerMetricsServiceProps) {
    super(scope, id);
    const { identity } = props;
    this.apiObject = new k8s.KubeService(this, 'Resource', {
      metadata: { name: identity.metricsServiceName, namespace: identity.namespace, labels: { ...identity.labels } },
      spec: {
        type: 'ClusterIP',
        selector: { ...identity.selector },
        ports: [{ name: 'metrics', port: identity.metricsPort, targetPort: k8s.IntOrString.fromString('metrics'), protocol: 'TCP' }],
      },
    });
  }
}
