import { createHash } from 'node:crypto';
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import { restrictedContainerSecurityContext } from '../pod-defaults.js';
import type { ControllerIdentity } from './controller-identity.js';
import { WEBHOOK_PORT_NAME } from './conversion-webhook.js';

/** The non-root user the image runs as (the Dockerfile's USER): distroless' "nonroot". */
export const CONTROLLER_USER = 65532;

/**
 * The controller process's environment (besides POD_NAMESPACE), as the bundle
 * deploys it and `npm run bench:controller` runs it, so the figures are those
 * of what is deployed:
 * - NODE_OPTIONS `--max-semi-space-size=8`: half the young generation V8
 *   sizes by default on 64-bit (16 MB semi-spaces). 2 MB held the peak
 *   10 MB lower at 10,000 clusters but scavenged four times as often, and
 *   every reconcile in flight survived the scavenges: 18% more controller
 *   CPU (figures in docs/performance.md).
 * - MALLOC_ARENA_MAX 2: glibc gives each thread that allocates (V8's compiler
 *   and GC workers, libuv's pool) an arena of its own, up to 8 per core, and
 *   memory freed in one arena is not reused by another; two arenas hold less.
 */
export const CONTROLLER_PROCESS_ENV: Readonly<Record<string, string>> = {
  NODE_OPTIONS: '--max-semi-space-size=8',
  MALLOC_ARENA_MAX: '2',
};

/** On the pod template: the sha256 of the configuration file, so a changed configuration rolls the replicas (they read it once, at start). */
export const CONFIG_HASH_ANNOTATION = 'dkv.example.com/config-sha256';

export interface ControllerDeploymentProps {
  /** Names, labels, selector, ports and where the configuration is mounted. */
  readonly identity: ControllerIdentity;
  /** The controller's image: one whose entrypoint is `dkv` (the Dockerfile at the repository root builds it). */
  readonly image: string;
  /**
   * Replicas: one leads through the Lease, the others wait warm, caches
   * synced, to take over within a lease duration.
   * @default 2
   */
  readonly replicas?: number;
  /**
   * The one namespace to watch (the controller's --namespace).
   * @default every namespace
   */
  readonly watchNamespace?: string;
  /** The configuration file the ConfigMap holds: its hash goes on the pod template. */
  readonly configText: string;
  /** The optional Secret whose keys become S3 credentials (backup.runner.credentialsSecret). */
  readonly credentialsSecret: string;
  /** Where every replica serves the conversion webhook (conversion.port): the webhook Service targets it. */
  readonly webhookPort: number;
}

/**
 * `dkv controller` as a Deployment. Every replica syncs its caches and
 * serves /healthz (watches alive), /readyz (caches synced) and /metrics;
 * only the Lease holder reconciles, and SIGTERM finishes in-flight
 * reconciles and hands the Lease over within the grace period. Pods meet the
 * "restricted" Pod Security Standard: a numeric non-root user, no privilege
 * escalation, no capabilities, a read-only root filesystem and the
 * runtime's default seccomp profile.
 */
export class ControllerDeployment extends Construct {
  readonly apiObject: k8s.KubeDeployment;

  constructor(scope: Construct, id: string, props: ControllerDeploymentProps) {
    super(scope, id);
    const { identity, image, replicas = 2, watchNamespace, configText, credentialsSecret } = props;
    const port = identity.metricsPort;
    const configVolume = 'config';
    this.apiObject = new k8s.KubeDeployment(this, 'Resource', {
      metadata: { name: identity.name, namespace: identity.namespace, labels: { ...identity.labels } },
      spec: {
        replicas,
        selector: { matchLabels: { ...identity.selector } },
        template: {
          metadata: {
            labels: { ...identity.labels },
            annotations: {
              'prometheus.io/scrape': 'true',
              'prometheus.io/port': String(port),
              [CONFIG_HASH_ANNOTATION]: createHash('sha256').update(configText).digest('hex'),
            },
          },
          spec: {
            serviceAccountName: identity.name,
            // SIGTERM finishes in-flight reconciles and hands the Lease over.
            terminationGracePeriodSeconds: 30,
            enableServiceLinks: false,
            securityContext: { runAsNonRoot: true, runAsUser: CONTROLLER_USER, runAsGroup: CONTROLLER_USER, seccompProfile: { type: 'RuntimeDefault' } },
            // Replicas on different nodes where there are some: a node lost takes only one.
            topologySpreadConstraints: [
              { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { ...identity.selector } } },
            ],
            containers: [
              {
                name: 'controller',
                image,
                args: [
                  'controller',
                  `--health-addr=0.0.0.0:${port}`,
                  '--workers=8',
                  `--config=${identity.configDirectory}/${identity.configFileName}`,
                  ...(watchNamespace === undefined ? [] : [`--namespace=${watchNamespace}`]),
                ],
                env: [
                  // The Lease lives in the controller's own namespace.
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  ...Object.entries(CONTROLLER_PROCESS_ENV).map(([name, value]) => ({ name, value })),
                ],
                // S3 credentials: read access to the backups, for checking a restore's source
                // (spec.restore.from) before a restoring cluster is created, and write access to
                // backup.definitions.s3Path when the definitions are exported on a schedule.
                // Optional: with IRSA the controller's own service account identity is enough.
                envFrom: [{ secretRef: { name: credentialsSecret, optional: true } }],
                ports: [{ name: 'metrics', containerPort: port, protocol: 'TCP' }, { name: WEBHOOK_PORT_NAME, containerPort: props.webhookPort, protocol: 'TCP' }],
                livenessProbe: { httpGet: { path: '/healthz', port: k8s.IntOrString.fromString('metrics') }, periodSeconds: 10 },
                readinessProbe: { httpGet: { path: '/readyz', port: k8s.IntOrString.fromString('metrics') }, periodSeconds: 5 },
                resources: {
                  requests: { cpu: k8s.Quantity.fromString('100m'), memory: k8s.Quantity.fromString('192Mi') },
                  limits: { memory: k8s.Quantity.fromString('384Mi') },
                },
                securityContext: restrictedContainerSecurityContext(),
                volumeMounts: [{ name: configVolume, mountPath: identity.configDirectory, readOnly: true }],
              },
            ],
            volumes: [{ name: configVolume, configMap: { name: identity.configMapName } }],
          },
        },
      },
    });
  }
}
