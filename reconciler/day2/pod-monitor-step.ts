/**
 * Whether the controller applies a cluster's PodMonitor (docs/monitoring.md).
 * The configuration turns monitoring on for every cluster the controller
 * runs; the PodMonitor kind exists only where the Prometheus Operator's CRDs
 * are installed. Where they are not, the controller withholds the
 * PodMonitor and says so in the cluster's `Monitoring` condition rather than
 * fail every reconcile on a kind the API server does not serve: the rest of
 * the cluster is reconciled as ever, and the PodMonitor follows once the
 * CRDs are installed. A pure function: the core reads, this decides.
 */

export interface PodMonitorInput {
  /** The configuration turns monitoring on and the engine's members have etcd's metrics (constructs/pod-monitor.ts, hasPodMonitor). */
  readonly wanted: boolean;
  /** The API server serves monitoring.coreos.com/v1 PodMonitors; undefined when it was not asked (not wanted). */
  readonly served: boolean | undefined;
}

export interface PodMonitorDecision {
  /** Leave the PodMonitor out of the desired objects. */
  readonly withhold: boolean;
  /** The `Monitoring` condition; none while monitoring is off. */
  readonly condition?: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
}

export const CRD_MISSING_MESSAGE = 'monitoring is on (the configuration\'s monitoring.enabled), but the API server serves no monitoring.coreos.com/v1 PodMonitor: '
  + 'install the Prometheus Operator\'s CRDs; the PodMonitor follows (docs/monitoring.md)';

export function decidePodMonitor(input: PodMonitorInput): PodMonitorDecision {
  if (!input.wanted) return { withhold: false };
  if (input.served !== true) return { withhold: true, condition: { status: 'False', reason: 'PodMonitorCRDMissing', message: CRD_MISSING_MESSAGE } };
  return { withhold: false, condition: { status: 'True', reason: 'PodMonitorApplied', message: 'Prometheus scrapes the members through the cluster\'s PodMonitor' } };
}
