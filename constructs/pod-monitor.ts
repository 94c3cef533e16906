import { Construct } from 'constructs';
import {
  PodMonitor, PodMonitorSpecPodMetricsEndpointsRelabelingsAction, PodMonitorSpecPodMetricsEndpointsScheme,
} from '../imports/monitoring.coreos.com.js';
import type { GeneratorConfig } from '../api/config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import { CLUSTER_LABEL, METRICS_PORT_NAME } from '../model/monitoring.js';

export interface KVPodMonitorProps {
  /** Name, labels and the member pods' selector shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The monitoring section: the labels a Prometheus selects PodMonitors by, and the scrape interval. */
  readonly monitoring: GeneratorConfig['monitoring'];
}

/**
 * Whether a cluster gets a PodMonitor: when the configuration turns
 * monitoring on (the Prometheus Operator is installed) and the members are
 * etcd, whose metrics the alert rules read (the generic engine's server is
 * the user's own, with metrics of its own or none).
 */
export function hasPodMonitor(config: Pick<GeneratorConfig, 'monitoring' | 'engine'>): boolean {
  return config.monitoring.enabled && config.engine === 'etcd';
}

/**
 * The Prometheus Operator's PodMonitor of a cluster's members: Prometheus
 * scrapes each member's plain-HTTP metrics listener (the container port
 * named `metrics`, apart from the client port, so no client certificate is
 * needed even with TLS on) and marks every series with the cluster's name
 * (`dkv_cluster`), by which the alert rules count a cluster's members and
 * its quorum. It selects the members with the StatefulSet's own selector, in
 * the cluster's namespace only, and is named after the StatefulSet (one per
 * cluster, so it cannot clash where the StatefulSets do not).
 */
export class KVPodMonitor extends Construct {
  readonly apiObject: PodMonitor;

  constructor(scope: Construct, id: string, props: KVPodMonitorProps) {
    super(scope, id);
    const { identity, monitoring } = props;
    this.apiObject = new PodMonitor(this, 'Resource', {
      metadata: { name: identity.statefulSetName, labels: { ...identity.serverLabels, ...monitoring.labels }, annotations: identity.annotations },
      spec: {
        selector: { matchLabels: { ...identity.selector } },
        podMetricsEndpoints: [{
          port: METRICS_PORT_NAME,
          path: '/metrics',
          scheme: PodMonitorSpecPodMetricsEndpointsScheme.HTTP,
          interval: monitoring.scrapeInterval,
          relabelings: [{ action: PodMonitorSpecPodMetricsEndpointsRelabelingsAction.REPLACE, targetLabel: CLUSTER_LABEL, replacement: identity.name }],
        }],
      },
    });
  }
}
