import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { ControllerIdentity } from './controller-identity.js';
import { DASHBOARD_FILE, dashboardJson } from './dashboard/dkv-dashboard.js';

/** The label Grafana's dashboard sidecar (the Grafana Helm chart's, kube-prometheus-stack's) loads ConfigMaps by. */
export const GRAFANA_DASHBOARD_LABEL = { grafana_dashboard: '1' } as const;

export interface DashboardConfigMapProps {
  /** Its namespace, the labels of the bundle and the controller's metrics Service (the dashboard's controller job). */
  readonly identity: ControllerIdentity;
}

/**
 * The DistributedKV Grafana dashboard (dashboard/dkv-dashboard.ts) in a
 * ConfigMap labelled `grafana_dashboard: "1"`, which Grafana's dashboard
 * sidecar finds and loads: no import by hand, and an upgrade of the bundle
 * replaces the dashboard (its uid is stable). The sidecar must watch the
 * controller's namespace (or every namespace). The same JSON is written
 * beside the bundle for a Grafana without the sidecar.
 */
export class DashboardConfigMap extends Construct {
  readonly apiObject: k8s.KubeConfigMap;

  constructor(scope: Construct, id: string, props: DashboardConfigMapProps) {
    super(scope, id);
    const { identity } = props;
    this.apiObject = new k8s.KubeConfigMap(this, 'Resource', {
      metadata: { name: `${identity.name}-dashboard`, namespace: identity.namespace, labels: { ...identity.labels, ...GRAFANA_DASHBOARD_LABEL } },
      data: { [DASHBOARD_FILE]: dashboardJson({ controllerJob: identity.metricsServiceName }) },
    });
  }
}
