import { Construct } from 'constructs';
import { App, Chart } from 'cdk8s';
import type { KubeObject } from '../../model/kube-object.js';
import { DkvAlertRules } from './alert-rules.js';
import { BackupRunnerClusterRole } from './backup-runner-cluster-role.js';
import { ControllerClusterRole } from './controller-cluster-role.js';
import { ControllerConfigMap } from './controller-config-map.js';
import type { ControllerConfiguration } from './controller-configuration.js';
import { ControllerDeployment } from './controller-deployment.js';
import { ControllerDisruptionBudget } from './controller-disruption-budget.js';
import { controllerIdentity, DEFAULT_INSTALL_NAMESPACE } from './controller-identity.js';
import { ControllerMetricsService } from './controller-metrics-service.js';
import { ControllerNamespace } from './controller-namespace.js';
import { ControllerNetworkPolicy } from './controller-network-policy.js';
import { ControllerServiceAccount } from './controller-service-account.js';
import { ControllerServiceMonitor } from './controller-service-monitor.js';
import { ConversionWebhook } from './conversion-webhook.js';
import { DashboardConfigMap } from './dashboard-config-map.js';
import { DistributedKVDefinition } from './custom-resource-definition.js';
import { ControllerWritePolicy } from './controller-write-policy.js';
import { FinalBackupFinalizerPolicy } from './final-backup-finalizer-policy.js';
import { LeaderElectionRole } from './leader-election-role.js';

export interface DkvInstallProps {
  /** The configuration the controller runs with (controllerConfiguration()): shipped in its ConfigMap, and the CRD's and the Lease's source. */
  readonly configuration: ControllerConfiguration;
  /**
   * Where the controller runs.
   * @default dkv-system
   */
  readonly namespace?: string;
  /**
   * The controller's image.
   * @default the configuration's backup.runner.image: the runner is the controller's own image
   */
  readonly image?: string;
  /**
   * Controller replicas (one leads, the others wait warm).
   * @default 2
   */
  readonly replicas?: number;
  /**
   * The one namespace the controller watches, with its permissions bound there only.
   * @default every namespace
   */
  readonly watchNamespace?: string;
  /**
   * Also a MutatingAdmissionPolicy that puts the final-backup finalizer on a
   * cluster with backups as it is created, saving the controller that write
   * (Kubernetes 1.36 or later: the kind is GA there).
   * @default false
   */
  readonly finalizerPolicy?: boolean;
}

/**
 * Everything a cluster needs to run the DistributedKV controller, in the
 * order `kubectl apply -f` should create it: the namespace, the CRD, the
 * controller's ServiceAccount and least-privilege RBAC (its ClusterRole, the
 * admission policy that narrows its writes to the objects a DistributedKV
 * controls: controller-write-policy.ts,
 * the leader-election Role on its one Lease), its configuration, the
 * Deployment with its metrics Service, its conversion webhook's Service and
 * certificate Secret's Role, PodDisruptionBudget and NetworkPolicy, and the
 * ClusterRole a namespace binds for backup runners that cut VolumeSnapshots;
 * with monitoring on (the configuration's monitoring.enabled, `dkv install
 * --monitoring`), the Prometheus Operator's ServiceMonitor of the controller,
 * the PrometheusRule of the alerts and the Grafana dashboard's ConfigMap; if
 * asked, the admission policy that adds the final-backup finalizer at
 * creation.
 */
export class DkvInstall extends Construct {
  constructor(scope: Construct, id: string, props: DkvInstallProps) {
    super(scope, id);
    const { configuration, replicas, watchNamespace } = props;
    const { config, text } = configuration;
    const identity = controllerIdentity(props.namespace ?? DEFAULT_INSTALL_NAMESPACE);
    new ControllerNamespace(this, 'Namespace', { identity });
    new DistributedKVDefinition(this, 'Definition', { config, webhookNamespace: identity.namespace });
    new ControllerServiceAccount(this, 'ServiceAccount', { identity });
    new ControllerClusterRole(this, 'ClusterRole', { identity, watchNamespace, monitoring: config.monitoring.enabled });
    new ControllerWritePolicy(this, 'WritePolicy', { identity, config });
    new LeaderElectionRole(this, 'LeaderElection', { identity });
    new BackupRunnerClusterRole(this, 'BackupRunner', { identity });
    new ControllerConfigMap(this, 'Config', { identity, configText: text });
    new ControllerMetricsService(this, 'Metrics', { identity });
    new ConversionWebhook(this, 'ConversionWebhook', { identity, config });
    new ControllerDeployment(this, 'Deployment', {
      identity, image: props.image ?? config.backup.runner.image, replicas, watchNamespace, configText: text, credentialsSecret: config.backup.runner.credentialsSecret,
      webhookPort: config.conversion.port,
    });
    new ControllerDisruptionBudget(this, 'DisruptionBudget', { identity });
    if (config.networkPolicy.enabled) new ControllerNetworkPolicy(this, 'NetworkPolicy', { identity, config });
    if (config.monitoring.enabled) {
      new ControllerServiceMonitor(this, 'ServiceMonitor', { identity, monitoring: config.monitoring });
      new DkvAlertRules(this, 'AlertRules', { identity, monitoring: config.monitoring });
      // The Grafana dashboard, in a ConfigMap Grafana's dashboard sidecar loads (`grafana_dashboard: "1"`).
      new DashboardConfigMap(this, 'Dashboard', { identity });
    }
    if (props.finalizerPolicy) new FinalBackupFinalizerPolicy(this, 'FinalizerPolicy', { identity, config, watchNamespace });
  }
}

/** The install bundle's objects, in apply order: what `dkv install` writes and the RBAC test applies. */
export function synthesizeInstall(props: DkvInstallProps): KubeObject[] {
  const app = new App({ outdir: '.' });
  const chart = new Chart(app, 'dkv-install', { disableResourceNameHashes: true });
  new DkvInstall(chart, 'Install', props);
  return chart.toJson();
}
