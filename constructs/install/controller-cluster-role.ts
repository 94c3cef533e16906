import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import { CRD_NAME, PLURAL } from '../../api/crd.js';
import { API_GROUP } from '../../api/validate.js';
import type { ControllerIdentity } from './controller-identity.js';
import { controllerSubject } from './controller-service-account.js';

/**
 * Watch clusters, and remove the finalizer earlier versions added (metadata only; the controller never writes spec).
 * `update`: the storage version migration writes each object back unchanged (conversion/storage-migration.ts).
 */
const CLUSTERS: k8s.PolicyRule = { apiGroups: [API_GROUP], resources: [PLURAL], verbs: ['get', 'list', 'watch', 'patch', 'update'] };

/** Each cluster's status: what the controller observed and did. */
const CLUSTER_STATUS: k8s.PolicyRule = { apiGroups: [API_GROUP], resources: [`${PLURAL}/status`], verbs: ['get', 'patch'] };

/**
 * The generated objects' owner references set blockOwnerDeletion, which the
 * OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift)
 * allows only to those who may update the owner's finalizers.
 */
const CLUSTER_FINALIZERS: k8s.PolicyRule = { apiGroups: [API_GROUP], resources: [`${PLURAL}/finalizers`], verbs: ['update'] };

/** The generated objects: cached by label, applied server-side, pruned. */
const GENERATED = ['get', 'list', 'watch', 'create', 'patch', 'delete'];
const STATEFUL_SETS: k8s.PolicyRule = { apiGroups: ['apps'], resources: ['statefulsets'], verbs: GENERATED };
const SERVICES: k8s.PolicyRule = { apiGroups: [''], resources: ['services'], verbs: GENERATED };
const DISRUPTION_BUDGETS: k8s.PolicyRule = { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: GENERATED };
/** Each cluster's NetworkPolicy (docs/network-policy.md): only ingress rules on its own members, never wider than the spec and configuration say. */
const NETWORK_POLICIES: k8s.PolicyRule = { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: GENERATED };
/**
 * Each cluster's PodMonitor, only with monitoring on (docs/monitoring.md): not cached (the kind exists only where
 * the Prometheus Operator's CRDs are installed), so read by name, created if absent, applied; not pruned. Whether
 * the kind is served is read from discovery, which every authenticated client may read.
 */
export const POD_MONITORS: k8s.PolicyRule = { apiGroups: ['monitoring.coreos.com'], resources: ['podmonitors'], verbs: ['get', 'create', 'patch'] };
/**
 * The Certificates of clusters with spec.tls.mode cert-manager (docs/security.md, "cert-manager"): as the
 * PodMonitors, not cached (the kind exists only where cert-manager's CRDs are installed), so read by name,
 * created if absent, applied; not pruned (they go with their cluster, by owner reference). Harmless where
 * no cluster uses cert-manager: a rule on a resource nobody serves grants nothing.
 */
export const CERTIFICATES: k8s.PolicyRule = { apiGroups: ['cert-manager.io'], resources: ['certificates'], verbs: ['get', 'create', 'patch'] };
const CRON_JOBS: k8s.PolicyRule = { apiGroups: ['batch'], resources: ['cronjobs'], verbs: GENERATED };

/**
 * The backup Jobs a CronJob runs, read for lastBackupTime, BackupFailing and
 * BackupStale; and the one final backup Job created from the CronJob's
 * template when a cluster is deleted. In fleet mode, a controller that
 * stands by deletes the backup Jobs still running in its cluster (fencing).
 */
const JOBS: k8s.PolicyRule = { apiGroups: ['batch'], resources: ['jobs'], verbs: ['list', 'watch', 'create', 'delete'] };

/** The member ConfigMap (etcd engine): how a member that starts joins. */
const CONFIG_MAPS: k8s.PolicyRule = { apiGroups: [''], resources: ['configmaps'], verbs: GENERATED };

/**
 * Members' pods (etcd engine): read while an upgrade is under way or a member
 * is unhealthy, deleted one at a time (with uid preconditions) to restart a
 * member or to replace one (docs/auto-healing.md).
 */
const PODS: k8s.PolicyRule = { apiGroups: [''], resources: ['pods'], verbs: ['list', 'delete'] };

/**
 * A crash-looping member's previous log (read only): etcd's data-loss panic line is followed by its stack
 * trace, which pushes it out of the termination message a real kubelet keeps (the log's last 80 lines or
 * 2,048 bytes), so the replacement signal reads the log itself (reconciler/day2/member-replacement.ts).
 */
const POD_LOGS: k8s.PolicyRule = { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] };

/**
 * Storage growth: members' claims grow one at a time where their
 * StorageClass allows it. A restoring cluster with no claims yet is new: its
 * backup is checked before anything is created. Member replacement marks the
 * replaced member's claim and deletes it (uid precondition), so the
 * StatefulSet creates it again empty.
 */
const CLAIMS: k8s.PolicyRule = { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'patch', 'delete'] };

/** Whether a claim's StorageClass allows expansion (cluster-scoped: see ControllerClusterRole). */
const STORAGE_CLASSES: k8s.PolicyRule = { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list'] };

/** A cluster restored from a VolumeSnapshot (spec.restore.from): checked before anything is created. */
const VOLUME_SNAPSHOTS: k8s.PolicyRule = { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['get'] };

/**
 * The DistributedKV CRD only: its conversion webhook's caBundle (conversion/certificate-rotation.ts) and,
 * after a storage version migration, status.storedVersions (cluster-scoped: see ControllerClusterRole).
 */
const DEFINITION: k8s.PolicyRule = { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: [CRD_NAME], verbs: ['get', 'patch'] };
const DEFINITION_STATUS: k8s.PolicyRule = { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions/status'], resourceNames: [CRD_NAME], verbs: ['patch'] };

/**
 * Each cluster's TLS Secrets (spec.tls mode operator, reconciler/day2/tls-step.ts)
 * and client identities' Secrets (spec.clients, client-identity-step.ts):
 * `list` and `watch` for the cache, which selects only the Secrets with the
 * clusters' labels (RBAC cannot narrow a list by label: the selection keeps
 * every other Secret out of the controller's memory, not out of its reach);
 * `create` to issue them; `update` to rotate them (a renewed leaf, a new
 * issuing CA, the members' CRL: reconciler/core/certificate-rotation-writes.ts),
 * a whole-object PUT with the resourceVersion read as its precondition, so a
 * Secret changed since is never written over (`patch` would allow writes
 * without one, and is not granted); `delete` to revoke a client removed from
 * spec.clients (its Secret goes once its etcd user has; always with the uid
 * of the labelled Secret the cache showed as a precondition). No `get` (the
 * cache answers). A cluster's own Secrets still go with it, by owner reference.
 */
const SECRETS: k8s.PolicyRule = { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch', 'create', 'update', 'delete'] };

/** What the controller did and refused, on each cluster (kubectl describe). */
const EVENTS: k8s.PolicyRule = { apiGroups: [''], resources: ['events'], verbs: ['create'] };

/**
 * Everything `dkv controller` needs, and no more: proven sufficient by
 * test/integration/rbac.test.ts, which runs the controller with a token of
 * the bundle's ServiceAccount against a real API server in RBAC mode.
 */
export const CONTROLLER_RULES: readonly k8s.PolicyRule[] = [
  CLUSTERS, CLUSTER_STATUS, CLUSTER_FINALIZERS, STATEFUL_SETS, SERVICES, DISRUPTION_BUDGETS, NETWORK_POLICIES, CRON_JOBS, JOBS,
  CONFIG_MAPS, SECRETS, PODS, POD_LOGS, CLAIMS, STORAGE_CLASSES, VOLUME_SNAPSHOTS, EVENTS, DEFINITION, DEFINITION_STATUS, CERTIFICATES,
];

/** The rules on cluster-scoped resources, which a RoleBinding cannot grant. */
export const CLUSTER_SCOPED_RULES: readonly k8s.PolicyRule[] = [STORAGE_CLASSES, DEFINITION, DEFINITION_STATUS];

export interface ControllerClusterRoleProps {
  /** The ServiceAccount the role is bound to. */
  readonly identity: ControllerIdentity;
  /**
   * The one namespace the controller watches (its --namespace flag): the
   * role is then bound there only, by a RoleBinding, and the cluster-scoped
   * rules by a ClusterRoleBinding of their own.
   * @default every namespace: one ClusterRoleBinding
   */
  readonly watchNamespace?: string;
  /**
   * Monitoring is on (the configuration's monitoring.enabled): the role also
   * writes the clusters' PodMonitors.
   * @default false
   */
  readonly monitoring?: boolean;
}

/**
 * The controller's permissions on DistributedKVs and the objects they turn
 * into: a ClusterRole (CONTROLLER_RULES) bound to its ServiceAccount in every
 * namespace, or, for a controller that watches one namespace, in that one
 * namespace only. A RoleBinding grants nothing on cluster-scoped resources,
 * so those rules (StorageClasses) then get a ClusterRole and binding of
 * their own, under other names: a binding's role cannot change in place.
 */
export class ControllerClusterRole extends Construct {
  readonly clusterRole: k8s.KubeClusterRole;

  constructor(scope: Construct, id: string, props: ControllerClusterRoleProps) {
    super(scope, id);
    const { identity, watchNamespace } = props;
    const labels = { ...identity.labels };
    const subjects = [controllerSubject(identity)];
    const roleRef = (name: string): k8s.RoleRef => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
    const rules = props.monitoring ? [...CONTROLLER_RULES, POD_MONITORS] : CONTROLLER_RULES;
    this.clusterRole = new k8s.KubeClusterRole(this, 'Resource', { metadata: { name: identity.name, labels }, rules: rules.map((r) => ({ ...r })) });
    if (watchNamespace === undefined) {
      new k8s.KubeClusterRoleBinding(this, 'Binding', { metadata: { name: identity.name, labels }, roleRef: roleRef(identity.name), subjects });
      return;
    }
    new k8s.KubeRoleBinding(this, 'Binding', { metadata: { name: identity.name, namespace: watchNamespace, labels }, roleRef: roleRef(identity.name), subjects });
    const clusterScoped = `${identity.name}-cluster-scoped`;
    new k8s.KubeClusterRole(this, 'ClusterScoped', { metadata: { name: clusterScoped, labels }, rules: CLUSTER_SCOPED_RULES.map((r) => ({ ...r })) });
    new k8s.KubeClusterRoleBinding(this, 'ClusterScopedBinding', { metadata: { name: clusterScoped, labels }, roleRef: roleRef(clusterScoped), subjects });
  }
}
