/**
 * Names, labels and ports the install bundle's objects share, computed once:
 * the Deployment's selector, the PodDisruptionBudget's and the metrics
 * Service's are the same object, so they cannot disagree, and the bindings
 * name the ServiceAccount the Deployment runs as.
 */
export interface ControllerIdentity {
  /** Where the controller runs: its Deployment, ServiceAccount, ConfigMap, Lease. */
  readonly namespace: string;
  /** The Deployment, the ServiceAccount, the controller's ClusterRole and their bindings. */
  readonly name: string;
  /** On every object of the bundle and on the controller's pods. */
  readonly labels: Readonly<Record<string, string>>;
  /** Selects the controller's pods (Deployment, PodDisruptionBudget, metrics Service). */
  readonly selector: Readonly<Record<string, string>>;
  /** The ConfigMap holding the configuration file. */
  readonly configMapName: string;
  /** The configuration file's name in the ConfigMap and in the mounted directory. */
  readonly configFileName: string;
  /** Where the ConfigMap is mounted; the controller reads `<dir>/<configFileName>` (--config). */
  readonly configDirectory: string;
  /** /healthz, /readyz and /metrics (--health-addr). */
  readonly metricsPort: number;
  /** The metrics Service. */
  readonly metricsServiceName: string;
}

/** The default namespace of `dkv install`. */
export const DEFAULT_INSTALL_NAMESPACE = 'dkv-system';

const NAME = 'dkv-controller';

export function controllerIdentity(namespace: string = DEFAULT_INSTALL_NAMESPACE): ControllerIdentity {
  // Not the generated clusters' labels (app.kubernetes.io/name: distributedkv, managed-by: dkv):
  // the controller's caches select those, and its own objects must stay out of them.
  const selector = { 'app.kubernetes.io/name': NAME };
  return {
    namespace,
    name: NAME,
    labels: { ...selector, 'app.kubernetes.io/part-of': 'distributedkv' },
    selector,
    configMapName: `${NAME}-config`,
    configFileName: 'dkv.config.yaml',
    configDirectory: '/etc/dkv',
    metricsPort: 8080,
    metricsServiceName: `${NAME}-metrics`,
  };
}
