/**
 * What the monitoring objects (constructs/pod-monitor.ts, constructs/install/)
 * and the alert rules (constructs/install/alert-rules.ts) agree on: the label
 * by which a member's series name its cluster. A dashboard or a query of your
 * own selects a cluster's members by it and `namespace`.
 */

/** Set on every series scraped from a cluster's members: the DistributedKV's metadata.name. */
export const CLUSTER_LABEL = 'dkv_cluster';

/** The members' and the controller's metrics port name, on their containers and the controller's metrics Service. */
export const METRICS_PORT_NAME = 'metrics';
