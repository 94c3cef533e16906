/**
 * What the Prometheus Operator makes of a PodMonitor or ServiceMonitor, as a
 * static scrape job for a Prometheus without Kubernetes service discovery
 * (the test's members and controller are processes on loopback, not pods).
 * The target labels are the ones its generated configuration gives
 * (prometheus-operator's pkg/prometheus/promcfg.go): `namespace`, `pod`,
 * `container`, `endpoint` (the port's name) and `job` — the PodMonitor's
 * `<namespace>/<name>`, the ServiceMonitor's Service name — then the
 * endpoint's relabelings; `honor_labels`, path and scheme come from the
 * endpoint. Only what the generated monitors use is translated: a
 * relabeling other than a fixed `replace`, a `jobLabel` or `targetLabels`
 * is refused, so that a monitor this cannot mirror fails the test instead
 * of being scraped with other labels than a real Prometheus would give.
 */

/** A scrape target: a loopback address and what Kubernetes would know of it. */
export interface ScrapeTarget {
  /** host:port */
  readonly address: string;
  readonly pod: string;
  readonly container: string;
}

/** One `scrape_configs` entry of prometheus.yml. */
export type ScrapeJob = Record<string, unknown>;

interface MonitorEndpoint {
  readonly port?: string;
  readonly path?: string;
  readonly scheme?: string;
  readonly honorLabels?: boolean;
  readonly relabelings?: readonly { action?: string; targetLabel?: string; replacement?: string; sourceLabels?: readonly string[] }[];
}

interface Monitor {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec: {
    readonly jobLabel?: string;
    readonly targetLabels?: readonly string[];
    readonly podTargetLabels?: readonly string[];
    readonly podMetricsEndpoints?: readonly MonitorEndpoint[];
    readonly endpoints?: readonly MonitorEndpoint[];
  };
}

/** The fixed labels an endpoint's relabelings set (`replace` with a replacement and no source labels). */
function relabeled(monitor: Monitor, endpoint: MonitorEndpoint): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const r of endpoint.relabelings ?? []) {
    if ((r.action ?? 'replace').toLowerCase() !== 'replace' || r.sourceLabels?.length || !r.targetLabel || r.replacement === undefined) {
      throw new Error(`${monitor.kind} ${monitor.metadata.name}: relabeling ${JSON.stringify(r)} is not a fixed replace; this translation cannot mirror it`);
    }
    labels[r.targetLabel] = r.replacement;
  }
  return labels;
}

function onlyEndpoint(monitor: Monitor, endpoints: readonly MonitorEndpoint[] | undefined): MonitorEndpoint {
  if (monitor.spec.jobLabel || monitor.spec.targetLabels?.length || monitor.spec.podTargetLabels?.length) {
    throw new Error(`${monitor.kind} ${monitor.metadata.name}: jobLabel, targetLabels and podTargetLabels are not translated`);
  }
  if (endpoints?.length !== 1) throw new Error(`${monitor.kind} ${monitor.metadata.name}: ${endpoints?.length ?? 0} endpoints, this translation takes one`);
  return endpoints[0];
}

function job(name: string, endpoint: MonitorEndpoint, targets: readonly ScrapeTarget[], labels: (t: ScrapeTarget) => Record<string, string>): ScrapeJob {
  return {
    job_name: name,
    honor_labels: endpoint.honorLabels ?? false,
    metrics_path: endpoint.path ?? '/metrics',
    scheme: endpoint.scheme ?? 'http',
    static_configs: targets.map((t) => ({ targets: [t.address], labels: labels(t) })),
  };
}

/** A PodMonitor's job over the given pods (in the monitor's namespace: the generated ones select their own). */
export function podMonitorScrapeJob(monitor: Monitor, pods: readonly ScrapeTarget[]): ScrapeJob {
  const endpoint = onlyEndpoint(monitor, monitor.spec.podMetricsEndpoints);
  const namespace = monitor.metadata.namespace!;
  return job(`podMonitor/${namespace}/${monitor.metadata.name}/0`, endpoint, pods, (pod) => ({
    namespace, pod: pod.pod, container: pod.container, job: `${namespace}/${monitor.metadata.name}`,
    ...(endpoint.port ? { endpoint: endpoint.port } : {}),
    ...relabeled(monitor, endpoint),
  }));
}

/** A ServiceMonitor's job over the pods behind `service` (a Service in `namespace` that the monitor selects). */
export function serviceMonitorScrapeJob(monitor: Monitor, service: string, namespace: string, pods: readonly ScrapeTarget[]): ScrapeJob {
  const endpoint = onlyEndpoint(monitor, monitor.spec.endpoints);
  return job(`serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/0`, endpoint, pods, (pod) => ({
    namespace, service, pod: pod.pod, container: pod.container, job: service,
    ...(endpoint.port ? { endpoint: endpoint.port } : {}),
    ...relabeled(monitor, endpoint),
  }));
}
